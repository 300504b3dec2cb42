from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.batch_account import BatchAccount


T = TypeVar("T", bound="QueryAccount")


@_attrs_define
class QueryAccount:
    """
    Attributes:
        query (str):
        batches (list[BatchAccount]): The batches whose progress is kept.
        read (int):
        counted_in (int):
        dropped_late (int):
        not_counted (int):
        unknown (list[int]): Batches that cannot be checked.
    """

    query: str
    batches: list[BatchAccount]
    read: int
    counted_in: int
    dropped_late: int
    not_counted: int
    unknown: list[int]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        query = self.query

        batches = []
        for batches_item_data in self.batches:
            batches_item = batches_item_data.to_dict()
            batches.append(batches_item)

        read = self.read

        counted_in = self.counted_in

        dropped_late = self.dropped_late

        not_counted = self.not_counted

        unknown = self.unknown

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "query": query,
                "batches": batches,
                "read": read,
                "counted_in": counted_in,
                "dropped_late": dropped_late,
                "not_counted": not_counted,
                "unknown": unknown,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.batch_account import BatchAccount  # noqa: PLC0415

        d = dict(src_dict)
        query = d.pop("query")

        batches = []
        _batches = d.pop("batches")
        for batches_item_data in _batches:
            batches_item = BatchAccount.from_dict(batches_item_data)

            batches.append(batches_item)

        read = d.pop("read")

        counted_in = d.pop("counted_in")

        dropped_late = d.pop("dropped_late")

        not_counted = d.pop("not_counted")

        unknown = cast(list[int], d.pop("unknown"))

        query_account = cls(
            query=query,
            batches=batches,
            read=read,
            counted_in=counted_in,
            dropped_late=dropped_late,
            not_counted=not_counted,
            unknown=unknown,
        )

        query_account.additional_properties = d
        return query_account

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
