from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.directives_sink_options_additional_property import DirectivesSinkOptionsAdditionalProperty


T = TypeVar("T", bound="DirectivesSinkOptions")


@_attrs_define
class DirectivesSinkOptions:
    """Per query, the options its declared sink must carry (the Spark conf holds only their names)."""

    additional_properties: dict[str, DirectivesSinkOptionsAdditionalProperty] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        for prop_name, prop in self.additional_properties.items():
            field_dict[prop_name] = prop.to_dict()

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.directives_sink_options_additional_property import DirectivesSinkOptionsAdditionalProperty  # noqa: PLC0415

        d = dict(src_dict)
        directives_sink_options = cls()

        additional_properties = {}
        for prop_name, prop_dict in d.items():
            additional_property = DirectivesSinkOptionsAdditionalProperty.from_dict(prop_dict)

            additional_properties[prop_name] = additional_property

        directives_sink_options.additional_properties = additional_properties
        return directives_sink_options

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> DirectivesSinkOptionsAdditionalProperty:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: DirectivesSinkOptionsAdditionalProperty) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
