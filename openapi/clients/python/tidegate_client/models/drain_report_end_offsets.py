from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.drain_report_end_offsets_additional_property import DrainReportEndOffsetsAdditionalProperty


T = TypeVar("T", bound="DrainReportEndOffsets")


@_attrs_define
class DrainReportEndOffsets:
    """Per source, the offsets the drain processes up to, in the source's own format (eventlog: {"0": 120, "1": 95}; file:
    {"logOffset": 7}). Sources fixed in an earlier report keep their first value.

    """

    additional_properties: dict[str, DrainReportEndOffsetsAdditionalProperty] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        for prop_name, prop in self.additional_properties.items():
            field_dict[prop_name] = prop.to_dict()

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.drain_report_end_offsets_additional_property import DrainReportEndOffsetsAdditionalProperty  # noqa: PLC0415

        d = dict(src_dict)
        drain_report_end_offsets = cls()

        additional_properties = {}
        for prop_name, prop_dict in d.items():
            additional_property = DrainReportEndOffsetsAdditionalProperty.from_dict(prop_dict)

            additional_properties[prop_name] = additional_property

        drain_report_end_offsets.additional_properties = additional_properties
        return drain_report_end_offsets

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> DrainReportEndOffsetsAdditionalProperty:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: DrainReportEndOffsetsAdditionalProperty) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
