from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Readiness")


@_attrs_define
class Readiness:
    """
    Attributes:
        status (str):
        database (str):
        migration (None | str):
        expected_migration (None | str):
    """

    status: str
    database: str
    migration: None | str
    expected_migration: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        status = self.status

        database = self.database

        migration: None | str
        migration = self.migration

        expected_migration: None | str
        expected_migration = self.expected_migration

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "status": status,
                "database": database,
                "migration": migration,
                "expected_migration": expected_migration,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        status = d.pop("status")

        database = d.pop("database")

        def _parse_migration(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        migration = _parse_migration(d.pop("migration"))

        def _parse_expected_migration(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        expected_migration = _parse_expected_migration(d.pop("expected_migration"))

        readiness = cls(
            status=status,
            database=database,
            migration=migration,
            expected_migration=expected_migration,
        )

        readiness.additional_properties = d
        return readiness

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
