from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.progress_report_durations_ms import ProgressReportDurationsMs
    from ..models.source_progress import SourceProgress
    from ..models.state_operator_progress import StateOperatorProgress


T = TypeVar("T", bound="ProgressReport")


@_attrs_define
class ProgressReport:
    """One StreamingQueryListener progress event, as the runtime posts it.

    Attributes:
        query (str):
        batch_id (int):
        timestamp (None | str | Unset):
        num_input_rows (int | None | Unset):
        watermark (None | str | Unset):
        sources (list[SourceProgress] | Unset):
        state_operators (list[StateOperatorProgress] | Unset):
        durations_ms (ProgressReportDurationsMs | Unset):
        sink (None | str | Unset): The sink's description, e.g. FileSink[/out].
        idle (bool | Unset): Spark's idle event: the query runs and has no new input (no batch). Recorded as the query's
            idle_at; batch_id is its last batch. Default: False.
    """

    query: str
    batch_id: int
    timestamp: None | str | Unset = UNSET
    num_input_rows: int | None | Unset = UNSET
    watermark: None | str | Unset = UNSET
    sources: list[SourceProgress] | Unset = UNSET
    state_operators: list[StateOperatorProgress] | Unset = UNSET
    durations_ms: ProgressReportDurationsMs | Unset = UNSET
    sink: None | str | Unset = UNSET
    idle: bool | Unset = False

    def to_dict(self) -> dict[str, Any]:
        query = self.query

        batch_id = self.batch_id

        timestamp: None | str | Unset
        if isinstance(self.timestamp, Unset):
            timestamp = UNSET
        else:
            timestamp = self.timestamp

        num_input_rows: int | None | Unset
        if isinstance(self.num_input_rows, Unset):
            num_input_rows = UNSET
        else:
            num_input_rows = self.num_input_rows

        watermark: None | str | Unset
        if isinstance(self.watermark, Unset):
            watermark = UNSET
        else:
            watermark = self.watermark

        sources: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.sources, Unset):
            sources = []
            for sources_item_data in self.sources:
                sources_item = sources_item_data.to_dict()
                sources.append(sources_item)

        state_operators: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.state_operators, Unset):
            state_operators = []
            for state_operators_item_data in self.state_operators:
                state_operators_item = state_operators_item_data.to_dict()
                state_operators.append(state_operators_item)

        durations_ms: dict[str, Any] | Unset = UNSET
        if not isinstance(self.durations_ms, Unset):
            durations_ms = self.durations_ms.to_dict()

        sink: None | str | Unset
        if isinstance(self.sink, Unset):
            sink = UNSET
        else:
            sink = self.sink

        idle = self.idle

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "query": query,
                "batch_id": batch_id,
            }
        )
        if timestamp is not UNSET:
            field_dict["timestamp"] = timestamp
        if num_input_rows is not UNSET:
            field_dict["num_input_rows"] = num_input_rows
        if watermark is not UNSET:
            field_dict["watermark"] = watermark
        if sources is not UNSET:
            field_dict["sources"] = sources
        if state_operators is not UNSET:
            field_dict["state_operators"] = state_operators
        if durations_ms is not UNSET:
            field_dict["durations_ms"] = durations_ms
        if sink is not UNSET:
            field_dict["sink"] = sink
        if idle is not UNSET:
            field_dict["idle"] = idle

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.progress_report_durations_ms import ProgressReportDurationsMs  # noqa: PLC0415
        from ..models.source_progress import SourceProgress  # noqa: PLC0415
        from ..models.state_operator_progress import StateOperatorProgress  # noqa: PLC0415

        d = dict(src_dict)
        query = d.pop("query")

        batch_id = d.pop("batch_id")

        def _parse_timestamp(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        timestamp = _parse_timestamp(d.pop("timestamp", UNSET))

        def _parse_num_input_rows(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        num_input_rows = _parse_num_input_rows(d.pop("num_input_rows", UNSET))

        def _parse_watermark(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        watermark = _parse_watermark(d.pop("watermark", UNSET))

        _sources = d.pop("sources", UNSET)
        sources: list[SourceProgress] | Unset = UNSET
        if _sources is not UNSET:
            sources = []
            for sources_item_data in _sources:
                sources_item = SourceProgress.from_dict(sources_item_data)

                sources.append(sources_item)

        _state_operators = d.pop("state_operators", UNSET)
        state_operators: list[StateOperatorProgress] | Unset = UNSET
        if _state_operators is not UNSET:
            state_operators = []
            for state_operators_item_data in _state_operators:
                state_operators_item = StateOperatorProgress.from_dict(state_operators_item_data)

                state_operators.append(state_operators_item)

        _durations_ms = d.pop("durations_ms", UNSET)
        durations_ms: ProgressReportDurationsMs | Unset
        if isinstance(_durations_ms, Unset):
            durations_ms = UNSET
        else:
            durations_ms = ProgressReportDurationsMs.from_dict(_durations_ms)

        def _parse_sink(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        sink = _parse_sink(d.pop("sink", UNSET))

        idle = d.pop("idle", UNSET)

        progress_report = cls(
            query=query,
            batch_id=batch_id,
            timestamp=timestamp,
            num_input_rows=num_input_rows,
            watermark=watermark,
            sources=sources,
            state_operators=state_operators,
            durations_ms=durations_ms,
            sink=sink,
            idle=idle,
        )

        return progress_report
