from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RetentionBody")


@_attrs_define
class RetentionBody:
    """
    Attributes:
        keep_last (int | None | Unset): Keep this many newest snapshots; null: no limit.
        max_age (None | str | Unset): Delete snapshots older than this; null: no limit.
    """

    keep_last: int | None | Unset = UNSET
    max_age: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        keep_last: int | None | Unset
        if isinstance(self.keep_last, Unset):
            keep_last = UNSET
        else:
            keep_last = self.keep_last

        max_age: None | str | Unset
        if isinstance(self.max_age, Unset):
            max_age = UNSET
        else:
            max_age = self.max_age

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if keep_last is not UNSET:
            field_dict["keep_last"] = keep_last
        if max_age is not UNSET:
            field_dict["max_age"] = max_age

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_keep_last(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        keep_last = _parse_keep_last(d.pop("keep_last", UNSET))

        def _parse_max_age(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        max_age = _parse_max_age(d.pop("max_age", UNSET))

        retention_body = cls(
            keep_last=keep_last,
            max_age=max_age,
        )

        return retention_body
