from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.query_spec_output_mode import QuerySpecOutputMode
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.sink_spec import SinkSpec
    from ..models.source_spec import SourceSpec
    from ..models.stateful_operator_spec import StatefulOperatorSpec


T = TypeVar("T", bound="QuerySpec")


@_attrs_define
class QuerySpec:
    """
    Attributes:
        sources (list[SourceSpec]):
        name (None | str | Unset): Unique within the version. Omitted: derived from the query's input.
        stateful_operators (list[StatefulOperatorSpec] | Unset):
        output_mode (QuerySpecOutputMode | Unset):  Default: QuerySpecOutputMode.APPEND.
        trigger (None | str | Unset): PSTL interval, e.g. '15 SECONDS'; omitted: as fast as possible.
        partitioned_on (list[str] | Unset):
        sink (None | SinkSpec | Unset): Where the query writes. Declared, the runtime refuses a writer that writes
            elsewhere, and an update or a submit from a snapshot is refused before anything stops when a file sink's log
            does not fit the batch the query resumes at. Omitted: the job's code alone decides (its file sink is checked
            once the new run reports it).
        checkpoint_location (None | str | Unset): Must lie under the checkpoint root. Omitted:
            ${checkpoint_root}/${job}/${run}/${query}.
        upstream (list[str] | Unset): Queries of this version whose output this query reads (a chain). A drain finishes
            them before it fixes this query's end offsets, so nothing they write is left behind.
    """

    sources: list[SourceSpec]
    name: None | str | Unset = UNSET
    stateful_operators: list[StatefulOperatorSpec] | Unset = UNSET
    output_mode: QuerySpecOutputMode | Unset = QuerySpecOutputMode.APPEND
    trigger: None | str | Unset = UNSET
    partitioned_on: list[str] | Unset = UNSET
    sink: None | SinkSpec | Unset = UNSET
    checkpoint_location: None | str | Unset = UNSET
    upstream: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.sink_spec import SinkSpec  # noqa: PLC0415

        sources = []
        for sources_item_data in self.sources:
            sources_item = sources_item_data.to_dict()
            sources.append(sources_item)

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        stateful_operators: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.stateful_operators, Unset):
            stateful_operators = []
            for stateful_operators_item_data in self.stateful_operators:
                stateful_operators_item = stateful_operators_item_data.to_dict()
                stateful_operators.append(stateful_operators_item)

        output_mode: str | Unset = UNSET
        if not isinstance(self.output_mode, Unset):
            output_mode = self.output_mode.value

        trigger: None | str | Unset
        if isinstance(self.trigger, Unset):
            trigger = UNSET
        else:
            trigger = self.trigger

        partitioned_on: list[str] | Unset = UNSET
        if not isinstance(self.partitioned_on, Unset):
            partitioned_on = self.partitioned_on

        sink: dict[str, Any] | None | Unset
        if isinstance(self.sink, Unset):
            sink = UNSET
        elif isinstance(self.sink, SinkSpec):
            sink = self.sink.to_dict()
        else:
            sink = self.sink

        checkpoint_location: None | str | Unset
        if isinstance(self.checkpoint_location, Unset):
            checkpoint_location = UNSET
        else:
            checkpoint_location = self.checkpoint_location

        upstream: list[str] | Unset = UNSET
        if not isinstance(self.upstream, Unset):
            upstream = self.upstream

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "sources": sources,
            }
        )
        if name is not UNSET:
            field_dict["name"] = name
        if stateful_operators is not UNSET:
            field_dict["stateful_operators"] = stateful_operators
        if output_mode is not UNSET:
            field_dict["output_mode"] = output_mode
        if trigger is not UNSET:
            field_dict["trigger"] = trigger
        if partitioned_on is not UNSET:
            field_dict["partitioned_on"] = partitioned_on
        if sink is not UNSET:
            field_dict["sink"] = sink
        if checkpoint_location is not UNSET:
            field_dict["checkpoint_location"] = checkpoint_location
        if upstream is not UNSET:
            field_dict["upstream"] = upstream

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.sink_spec import SinkSpec  # noqa: PLC0415
        from ..models.source_spec import SourceSpec  # noqa: PLC0415
        from ..models.stateful_operator_spec import StatefulOperatorSpec  # noqa: PLC0415

        d = dict(src_dict)
        sources = []
        _sources = d.pop("sources")
        for sources_item_data in _sources:
            sources_item = SourceSpec.from_dict(sources_item_data)

            sources.append(sources_item)

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        _stateful_operators = d.pop("stateful_operators", UNSET)
        stateful_operators: list[StatefulOperatorSpec] | Unset = UNSET
        if _stateful_operators is not UNSET:
            stateful_operators = []
            for stateful_operators_item_data in _stateful_operators:
                stateful_operators_item = StatefulOperatorSpec.from_dict(stateful_operators_item_data)

                stateful_operators.append(stateful_operators_item)

        _output_mode = d.pop("output_mode", UNSET)
        output_mode: QuerySpecOutputMode | Unset
        if isinstance(_output_mode, Unset):
            output_mode = UNSET
        else:
            output_mode = QuerySpecOutputMode(_output_mode)

        def _parse_trigger(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        trigger = _parse_trigger(d.pop("trigger", UNSET))

        partitioned_on = cast(list[str], d.pop("partitioned_on", UNSET))

        def _parse_sink(data: object) -> None | SinkSpec | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                sink_type_0 = SinkSpec.from_dict(data)

                return sink_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SinkSpec | Unset, data)

        sink = _parse_sink(d.pop("sink", UNSET))

        def _parse_checkpoint_location(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        checkpoint_location = _parse_checkpoint_location(d.pop("checkpoint_location", UNSET))

        upstream = cast(list[str], d.pop("upstream", UNSET))

        query_spec = cls(
            sources=sources,
            name=name,
            stateful_operators=stateful_operators,
            output_mode=output_mode,
            trigger=trigger,
            partitioned_on=partitioned_on,
            sink=sink,
            checkpoint_location=checkpoint_location,
            upstream=upstream,
        )

        return query_spec
