from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="DrainBody")


@_attrs_define
class DrainBody:
    """
    Attributes:
        timeout_seconds (int | Unset): A drain still running after this fails, and the job is stopped cleanly at a batch
            boundary (nothing lost; it resumes from its checkpoint). Default: 1800.
    """

    timeout_seconds: int | Unset = 1800

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

        drain_body = cls(
            timeout_seconds=timeout_seconds,
        )

        return drain_body
