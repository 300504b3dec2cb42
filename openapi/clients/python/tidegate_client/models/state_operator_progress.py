from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.state_operator_progress_custom_metrics import StateOperatorProgressCustomMetrics


T = TypeVar("T", bound="StateOperatorProgress")


@_attrs_define
class StateOperatorProgress:
    """
    Attributes:
        operator_name (None | str | Unset):
        num_rows_total (int | None | Unset):
        memory_used_bytes (int | None | Unset):
        num_rows_dropped_by_watermark (int | None | Unset): Rows the operator discarded in this batch because their
            event time was behind the watermark (Spark's numRowsDroppedByWatermark: late data, counted after any partial
            aggregation).
        custom_metrics (StateOperatorProgressCustomMetrics | Unset): The operator's custom metrics as Spark reports
            them, summed over its partitions, the numeric and finite ones (at most 64; per-partition figures left out): on
            RocksDB the store's load (rocksdbLoadLatencyMs, rocksdbReplayChangeLogLatencyMs,
            rocksdbNumReplayChangelogFiles), the files and bytes copied from the checkpoint (rocksdbFilesCopied,
            rocksdbBytesCopied) and the commit's steps.
    """

    operator_name: None | str | Unset = UNSET
    num_rows_total: int | None | Unset = UNSET
    memory_used_bytes: int | None | Unset = UNSET
    num_rows_dropped_by_watermark: int | None | Unset = UNSET
    custom_metrics: StateOperatorProgressCustomMetrics | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        operator_name: None | str | Unset
        if isinstance(self.operator_name, Unset):
            operator_name = UNSET
        else:
            operator_name = self.operator_name

        num_rows_total: int | None | Unset
        if isinstance(self.num_rows_total, Unset):
            num_rows_total = UNSET
        else:
            num_rows_total = self.num_rows_total

        memory_used_bytes: int | None | Unset
        if isinstance(self.memory_used_bytes, Unset):
            memory_used_bytes = UNSET
        else:
            memory_used_bytes = self.memory_used_bytes

        num_rows_dropped_by_watermark: int | None | Unset
        if isinstance(self.num_rows_dropped_by_watermark, Unset):
            num_rows_dropped_by_watermark = UNSET
        else:
            num_rows_dropped_by_watermark = self.num_rows_dropped_by_watermark

        custom_metrics: dict[str, Any] | Unset = UNSET
        if not isinstance(self.custom_metrics, Unset):
            custom_metrics = self.custom_metrics.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if operator_name is not UNSET:
            field_dict["operator_name"] = operator_name
        if num_rows_total is not UNSET:
            field_dict["num_rows_total"] = num_rows_total
        if memory_used_bytes is not UNSET:
            field_dict["memory_used_bytes"] = memory_used_bytes
        if num_rows_dropped_by_watermark is not UNSET:
            field_dict["num_rows_dropped_by_watermark"] = num_rows_dropped_by_watermark
        if custom_metrics is not UNSET:
            field_dict["custom_metrics"] = custom_metrics

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.state_operator_progress_custom_metrics import StateOperatorProgressCustomMetrics  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_operator_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        operator_name = _parse_operator_name(d.pop("operator_name", UNSET))

        def _parse_num_rows_total(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        num_rows_total = _parse_num_rows_total(d.pop("num_rows_total", UNSET))

        def _parse_memory_used_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        memory_used_bytes = _parse_memory_used_bytes(d.pop("memory_used_bytes", UNSET))

        def _parse_num_rows_dropped_by_watermark(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        num_rows_dropped_by_watermark = _parse_num_rows_dropped_by_watermark(
            d.pop("num_rows_dropped_by_watermark", UNSET)
        )

        _custom_metrics = d.pop("custom_metrics", UNSET)
        custom_metrics: StateOperatorProgressCustomMetrics | Unset
        if isinstance(_custom_metrics, Unset):
            custom_metrics = UNSET
        else:
            custom_metrics = StateOperatorProgressCustomMetrics.from_dict(_custom_metrics)

        state_operator_progress = cls(
            operator_name=operator_name,
            num_rows_total=num_rows_total,
            memory_used_bytes=memory_used_bytes,
            num_rows_dropped_by_watermark=num_rows_dropped_by_watermark,
            custom_metrics=custom_metrics,
        )

        return state_operator_progress
