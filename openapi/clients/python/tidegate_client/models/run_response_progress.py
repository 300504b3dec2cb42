from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="RunResponseProgress")


@_attrs_define
class RunResponseProgress:
    """Latest progress per query: the driver's report of its last batch, plus rows_dropped_late (rows its stateful
    operators discarded as behind the watermark in that batch, summed over them; null when none reports it),
    rows_dropped_late_total (the same over every batch of this run, each batch counted once) and watermark_lead_seconds
    (the watermark minus the driver's clock at the batch's start: positive when the watermark runs ahead of the clock).

    """

    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        run_response_progress = cls()

        run_response_progress.additional_properties = d
        return run_response_progress

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
