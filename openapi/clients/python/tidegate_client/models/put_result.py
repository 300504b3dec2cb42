from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="PutResult")


@_attrs_define
class PutResult:
    """
    Attributes:
        upserted (int):
        restart_operation_id (int | None | Unset):
    """

    upserted: int
    restart_operation_id: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        upserted = self.upserted

        restart_operation_id: int | None | Unset
        if isinstance(self.restart_operation_id, Unset):
            restart_operation_id = UNSET
        else:
            restart_operation_id = self.restart_operation_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "upserted": upserted,
            }
        )
        if restart_operation_id is not UNSET:
            field_dict["restart_operation_id"] = restart_operation_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        upserted = d.pop("upserted")

        def _parse_restart_operation_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        restart_operation_id = _parse_restart_operation_id(d.pop("restart_operation_id", UNSET))

        put_result = cls(
            upserted=upserted,
            restart_operation_id=restart_operation_id,
        )

        put_result.additional_properties = d
        return put_result

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
