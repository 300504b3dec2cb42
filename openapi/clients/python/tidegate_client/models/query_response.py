from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.sink_spec import SinkSpec
    from ..models.source_spec import SourceSpec
    from ..models.stateful_operator_spec import StatefulOperatorSpec


T = TypeVar("T", bound="QueryResponse")


@_attrs_define
class QueryResponse:
    """
    Attributes:
        name (str):
        name_derived (bool):
        sources (list[SourceSpec]):
        stateful_operators (list[StatefulOperatorSpec]):
        output_mode (str):
        trigger (None | str):
        trigger_ms (int | None):
        partitioned_on (list[str]):
        checkpoint_location (None | str):
        stateful (bool):
        upstream (list[str] | Unset):
        sink (None | SinkSpec | Unset):
    """

    name: str
    name_derived: bool
    sources: list[SourceSpec]
    stateful_operators: list[StatefulOperatorSpec]
    output_mode: str
    trigger: None | str
    trigger_ms: int | None
    partitioned_on: list[str]
    checkpoint_location: None | str
    stateful: bool
    upstream: list[str] | Unset = UNSET
    sink: None | SinkSpec | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.sink_spec import SinkSpec  # noqa: PLC0415

        name = self.name

        name_derived = self.name_derived

        sources = []
        for sources_item_data in self.sources:
            sources_item = sources_item_data.to_dict()
            sources.append(sources_item)

        stateful_operators = []
        for stateful_operators_item_data in self.stateful_operators:
            stateful_operators_item = stateful_operators_item_data.to_dict()
            stateful_operators.append(stateful_operators_item)

        output_mode = self.output_mode

        trigger: None | str
        trigger = self.trigger

        trigger_ms: int | None
        trigger_ms = self.trigger_ms

        partitioned_on = self.partitioned_on

        checkpoint_location: None | str
        checkpoint_location = self.checkpoint_location

        stateful = self.stateful

        upstream: list[str] | Unset = UNSET
        if not isinstance(self.upstream, Unset):
            upstream = self.upstream

        sink: dict[str, Any] | None | Unset
        if isinstance(self.sink, Unset):
            sink = UNSET
        elif isinstance(self.sink, SinkSpec):
            sink = self.sink.to_dict()
        else:
            sink = self.sink

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "name_derived": name_derived,
                "sources": sources,
                "stateful_operators": stateful_operators,
                "output_mode": output_mode,
                "trigger": trigger,
                "trigger_ms": trigger_ms,
                "partitioned_on": partitioned_on,
                "checkpoint_location": checkpoint_location,
                "stateful": stateful,
            }
        )
        if upstream is not UNSET:
            field_dict["upstream"] = upstream
        if sink is not UNSET:
            field_dict["sink"] = sink

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.sink_spec import SinkSpec  # noqa: PLC0415
        from ..models.source_spec import SourceSpec  # noqa: PLC0415
        from ..models.stateful_operator_spec import StatefulOperatorSpec  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        name_derived = d.pop("name_derived")

        sources = []
        _sources = d.pop("sources")
        for sources_item_data in _sources:
            sources_item = SourceSpec.from_dict(sources_item_data)

            sources.append(sources_item)

        stateful_operators = []
        _stateful_operators = d.pop("stateful_operators")
        for stateful_operators_item_data in _stateful_operators:
            stateful_operators_item = StatefulOperatorSpec.from_dict(stateful_operators_item_data)

            stateful_operators.append(stateful_operators_item)

        output_mode = d.pop("output_mode")

        def _parse_trigger(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        trigger = _parse_trigger(d.pop("trigger"))

        def _parse_trigger_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        trigger_ms = _parse_trigger_ms(d.pop("trigger_ms"))

        partitioned_on = cast(list[str], d.pop("partitioned_on"))

        def _parse_checkpoint_location(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        checkpoint_location = _parse_checkpoint_location(d.pop("checkpoint_location"))

        stateful = d.pop("stateful")

        upstream = cast(list[str], d.pop("upstream", UNSET))

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

        query_response = cls(
            name=name,
            name_derived=name_derived,
            sources=sources,
            stateful_operators=stateful_operators,
            output_mode=output_mode,
            trigger=trigger,
            trigger_ms=trigger_ms,
            partitioned_on=partitioned_on,
            checkpoint_location=checkpoint_location,
            stateful=stateful,
            upstream=upstream,
            sink=sink,
        )

        query_response.additional_properties = d
        return query_response

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
