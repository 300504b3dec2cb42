from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="FenceReport")


@_attrs_define
class FenceReport:
    """What a driver's runtime says once it can no longer touch a checkpoint.

    Attributes:
        attempt (int): The attempt this driver runs. A report from an earlier attempt (one being replaced) changes
            nothing.
    """

    attempt: int

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "attempt": attempt,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempt = d.pop("attempt")

        fence_report = cls(
            attempt=attempt,
        )

        return fence_report
