from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.source_kind_drain import SourceKindDrain

T = TypeVar("T", bound="SourceKind")


@_attrs_define
class SourceKind:
    """
    Attributes:
        kind (str):
        startpoints (list[str]): Startpoint types this kind takes.
        drain (SourceKindDrain): native: end offsets fixed at drain time, every window flushed by a drain marker;
            bounded: the query is stopped at a batch boundary and run again on its checkpoint with Trigger.AvailableNow (it
            ends at what was there when the drain reached it), then one batch that reads nothing with its watermark past
            every window flushes the windows still open; unsupported: use stop.
        drain_handoff (bool): An update by drain can start the next version exactly at the drained offsets of this kind
            (OFFSET startpoints per partition).
        note (str):
    """

    kind: str
    startpoints: list[str]
    drain: SourceKindDrain
    drain_handoff: bool
    note: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        kind = self.kind

        startpoints = self.startpoints

        drain = self.drain.value

        drain_handoff = self.drain_handoff

        note = self.note

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "kind": kind,
                "startpoints": startpoints,
                "drain": drain,
                "drain_handoff": drain_handoff,
                "note": note,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        kind = d.pop("kind")

        startpoints = cast(list[str], d.pop("startpoints"))

        drain = SourceKindDrain(d.pop("drain"))

        drain_handoff = d.pop("drain_handoff")

        note = d.pop("note")

        source_kind = cls(
            kind=kind,
            startpoints=startpoints,
            drain=drain,
            drain_handoff=drain_handoff,
            note=note,
        )

        source_kind.additional_properties = d
        return source_kind

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
