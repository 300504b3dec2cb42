from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="SourceProgress")


@_attrs_define
class SourceProgress:
    """
    Attributes:
        description (None | str | Unset):
        start_offset (Any | Unset):
        end_offset (Any | Unset):
        latest_offset (Any | Unset):
        num_input_rows (int | None | Unset):
    """

    description: None | str | Unset = UNSET
    start_offset: Any | Unset = UNSET
    end_offset: Any | Unset = UNSET
    latest_offset: Any | Unset = UNSET
    num_input_rows: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        start_offset = self.start_offset

        end_offset = self.end_offset

        latest_offset = self.latest_offset

        num_input_rows: int | None | Unset
        if isinstance(self.num_input_rows, Unset):
            num_input_rows = UNSET
        else:
            num_input_rows = self.num_input_rows

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if description is not UNSET:
            field_dict["description"] = description
        if start_offset is not UNSET:
            field_dict["start_offset"] = start_offset
        if end_offset is not UNSET:
            field_dict["end_offset"] = end_offset
        if latest_offset is not UNSET:
            field_dict["latest_offset"] = latest_offset
        if num_input_rows is not UNSET:
            field_dict["num_input_rows"] = num_input_rows

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        start_offset = d.pop("start_offset", UNSET)

        end_offset = d.pop("end_offset", UNSET)

        latest_offset = d.pop("latest_offset", UNSET)

        def _parse_num_input_rows(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        num_input_rows = _parse_num_input_rows(d.pop("num_input_rows", UNSET))

        source_progress = cls(
            description=description,
            start_offset=start_offset,
            end_offset=end_offset,
            latest_offset=latest_offset,
            num_input_rows=num_input_rows,
        )

        return source_progress
