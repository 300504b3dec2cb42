from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.preview_row_move import PreviewRowMove
from ..models.preview_row_type import PreviewRowType

T = TypeVar("T", bound="PreviewRow")


@_attrs_define
class PreviewRow:
    """
    Attributes:
        source (str):
        partition (int):
        startpoint_id (int):
        type_ (PreviewRowType):
        value (int | None):
        current (int | None): Where the query would start without it.
        target (int):
        move (PreviewRowMove):
        records (int | None): Records replayed (backward) or skipped (forward).
    """

    source: str
    partition: int
    startpoint_id: int
    type_: PreviewRowType
    value: int | None
    current: int | None
    target: int
    move: PreviewRowMove
    records: int | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        source = self.source

        partition = self.partition

        startpoint_id = self.startpoint_id

        type_ = self.type_.value

        value: int | None
        value = self.value

        current: int | None
        current = self.current

        target = self.target

        move = self.move.value

        records: int | None
        records = self.records

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "source": source,
                "partition": partition,
                "startpoint_id": startpoint_id,
                "type": type_,
                "value": value,
                "current": current,
                "target": target,
                "move": move,
                "records": records,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        source = d.pop("source")

        partition = d.pop("partition")

        startpoint_id = d.pop("startpoint_id")

        type_ = PreviewRowType(d.pop("type"))

        def _parse_value(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        value = _parse_value(d.pop("value"))

        def _parse_current(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        current = _parse_current(d.pop("current"))

        target = d.pop("target")

        move = PreviewRowMove(d.pop("move"))

        def _parse_records(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        records = _parse_records(d.pop("records"))

        preview_row = cls(
            source=source,
            partition=partition,
            startpoint_id=startpoint_id,
            type_=type_,
            value=value,
            current=current,
            target=target,
            move=move,
            records=records,
        )

        preview_row.additional_properties = d
        return preview_row

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
