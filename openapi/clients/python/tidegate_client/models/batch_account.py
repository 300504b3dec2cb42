from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="BatchAccount")


@_attrs_define
class BatchAccount:
    """
    Attributes:
        batch_id (int):
        read (int | None): Records the batch read, from the run's checkpoint (offsets/N less offsets/N-1); null when it
            cannot say (the first batch, offsets no longer kept).
        counted_in (int | None): Spark's numInputRows for the batch.
        dropped_late (int): Rows its stateful operators dropped as late.
        not_counted (int | None): read minus counted_in; null when either is.
    """

    batch_id: int
    read: int | None
    counted_in: int | None
    dropped_late: int
    not_counted: int | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        batch_id = self.batch_id

        read: int | None
        read = self.read

        counted_in: int | None
        counted_in = self.counted_in

        dropped_late = self.dropped_late

        not_counted: int | None
        not_counted = self.not_counted

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "batch_id": batch_id,
                "read": read,
                "counted_in": counted_in,
                "dropped_late": dropped_late,
                "not_counted": not_counted,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        batch_id = d.pop("batch_id")

        def _parse_read(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        read = _parse_read(d.pop("read"))

        def _parse_counted_in(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        counted_in = _parse_counted_in(d.pop("counted_in"))

        dropped_late = d.pop("dropped_late")

        def _parse_not_counted(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        not_counted = _parse_not_counted(d.pop("not_counted"))

        batch_account = cls(
            batch_id=batch_id,
            read=read,
            counted_in=counted_in,
            dropped_late=dropped_late,
            not_counted=not_counted,
        )

        batch_account.additional_properties = d
        return batch_account

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
