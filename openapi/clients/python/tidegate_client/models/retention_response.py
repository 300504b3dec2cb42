from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="RetentionResponse")


@_attrs_define
class RetentionResponse:
    """
    Attributes:
        job (str):
        keep_last (int | None):
        max_age_seconds (int | None):
        note (str | Unset):  Default: 'Applied after each export; a snapshot a run in an active state started from is
            never deleted.'.
    """

    job: str
    keep_last: int | None
    max_age_seconds: int | None
    note: str | Unset = "Applied after each export; a snapshot a run in an active state started from is never deleted."
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job = self.job

        keep_last: int | None
        keep_last = self.keep_last

        max_age_seconds: int | None
        max_age_seconds = self.max_age_seconds

        note = self.note

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job": job,
                "keep_last": keep_last,
                "max_age_seconds": max_age_seconds,
            }
        )
        if note is not UNSET:
            field_dict["note"] = note

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        job = d.pop("job")

        def _parse_keep_last(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        keep_last = _parse_keep_last(d.pop("keep_last"))

        def _parse_max_age_seconds(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        max_age_seconds = _parse_max_age_seconds(d.pop("max_age_seconds"))

        note = d.pop("note", UNSET)

        retention_response = cls(
            job=job,
            keep_last=keep_last,
            max_age_seconds=max_age_seconds,
            note=note,
        )

        retention_response.additional_properties = d
        return retention_response

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
