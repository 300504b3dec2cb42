from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="StopBody")


@_attrs_define
class StopBody:
    """
    Attributes:
        timeout_seconds (int | Unset): How long to wait for a graceful stop before killing the driver. Default: 120.
    """

    timeout_seconds: int | Unset = 120

    def to_dict(self) -> dict[str, Any]:
        timeout_seconds = self.timeout_seconds

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if timeout_seconds is not UNSET:
            field_dict["timeout_seconds"] = timeout_seconds

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        timeout_seconds = d.pop("timeout_seconds", UNSET)

        stop_body = cls(
            timeout_seconds=timeout_seconds,
        )

        return stop_body
