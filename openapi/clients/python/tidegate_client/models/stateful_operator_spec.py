from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="StatefulOperatorSpec")


@_attrs_define
class StatefulOperatorSpec:
    """
    Attributes:
        kind (str):
        name (None | str | Unset):
        key_schema (None | str | Unset): DDL of the state key.
        value_schema (None | str | Unset): DDL of the state value.
    """

    kind: str
    name: None | str | Unset = UNSET
    key_schema: None | str | Unset = UNSET
    value_schema: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        kind = self.kind

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        key_schema: None | str | Unset
        if isinstance(self.key_schema, Unset):
            key_schema = UNSET
        else:
            key_schema = self.key_schema

        value_schema: None | str | Unset
        if isinstance(self.value_schema, Unset):
            value_schema = UNSET
        else:
            value_schema = self.value_schema

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "kind": kind,
            }
        )
        if name is not UNSET:
            field_dict["name"] = name
        if key_schema is not UNSET:
            field_dict["key_schema"] = key_schema
        if value_schema is not UNSET:
            field_dict["value_schema"] = value_schema

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        kind = d.pop("kind")

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_key_schema(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        key_schema = _parse_key_schema(d.pop("key_schema", UNSET))

        def _parse_value_schema(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        value_schema = _parse_value_schema(d.pop("value_schema", UNSET))

        stateful_operator_spec = cls(
            kind=kind,
            name=name,
            key_schema=key_schema,
            value_schema=value_schema,
        )

        return stateful_operator_spec
