from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="StateOperatorProgressCustomMetrics")


@_attrs_define
class StateOperatorProgressCustomMetrics:
    """The operator's custom metrics as Spark reports them, summed over its partitions, the numeric and finite ones (at
    most 64; per-partition figures left out): on RocksDB the store's load (rocksdbLoadLatencyMs,
    rocksdbReplayChangeLogLatencyMs, rocksdbNumReplayChangelogFiles), the files and bytes copied from the checkpoint
    (rocksdbFilesCopied, rocksdbBytesCopied) and the commit's steps.

    """

    additional_properties: dict[str, float] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        state_operator_progress_custom_metrics = cls()

        state_operator_progress_custom_metrics.additional_properties = d
        return state_operator_progress_custom_metrics

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> float:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: float) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
