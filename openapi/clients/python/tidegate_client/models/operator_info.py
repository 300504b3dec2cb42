from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.operator_info_key_schema_type_0 import OperatorInfoKeySchemaType0
    from ..models.operator_info_value_schema_type_0 import OperatorInfoValueSchemaType0


T = TypeVar("T", bound="OperatorInfo")


@_attrs_define
class OperatorInfo:
    """
    Attributes:
        id (int):
        name (None | str): Spark's operator name, e.g. stateStoreSave.
        partitions (int):
        stores (list[str]):
        key_schema (None | OperatorInfoKeySchemaType0):
        value_schema (None | OperatorInfoValueSchemaType0):
    """

    id: int
    name: None | str
    partitions: int
    stores: list[str]
    key_schema: None | OperatorInfoKeySchemaType0
    value_schema: None | OperatorInfoValueSchemaType0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.operator_info_key_schema_type_0 import OperatorInfoKeySchemaType0  # noqa: PLC0415
        from ..models.operator_info_value_schema_type_0 import OperatorInfoValueSchemaType0  # noqa: PLC0415

        id = self.id

        name: None | str
        name = self.name

        partitions = self.partitions

        stores = self.stores

        key_schema: dict[str, Any] | None
        if isinstance(self.key_schema, OperatorInfoKeySchemaType0):
            key_schema = self.key_schema.to_dict()
        else:
            key_schema = self.key_schema

        value_schema: dict[str, Any] | None
        if isinstance(self.value_schema, OperatorInfoValueSchemaType0):
            value_schema = self.value_schema.to_dict()
        else:
            value_schema = self.value_schema

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "name": name,
                "partitions": partitions,
                "stores": stores,
                "key_schema": key_schema,
                "value_schema": value_schema,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.operator_info_key_schema_type_0 import OperatorInfoKeySchemaType0  # noqa: PLC0415
        from ..models.operator_info_value_schema_type_0 import OperatorInfoValueSchemaType0  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        def _parse_name(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        name = _parse_name(d.pop("name"))

        partitions = d.pop("partitions")

        stores = cast(list[str], d.pop("stores"))

        def _parse_key_schema(data: object) -> None | OperatorInfoKeySchemaType0:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                key_schema_type_0 = OperatorInfoKeySchemaType0.from_dict(data)

                return key_schema_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OperatorInfoKeySchemaType0, data)

        key_schema = _parse_key_schema(d.pop("key_schema"))

        def _parse_value_schema(data: object) -> None | OperatorInfoValueSchemaType0:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                value_schema_type_0 = OperatorInfoValueSchemaType0.from_dict(data)

                return value_schema_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OperatorInfoValueSchemaType0, data)

        value_schema = _parse_value_schema(d.pop("value_schema"))

        operator_info = cls(
            id=id,
            name=name,
            partitions=partitions,
            stores=stores,
            key_schema=key_schema,
            value_schema=value_schema,
        )

        operator_info.additional_properties = d
        return operator_info

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
