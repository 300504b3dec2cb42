from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="SnapshotBody")


@_attrs_define
class SnapshotBody:
    """
    Attributes:
        name (str): Unique within the job.
        stop (bool | Unset): Stop every query at a batch boundary first and end the run (hz-cli save-snapshot); false
            exports the committed state while the job keeps running. Default: False.
        timeout_seconds (int | Unset): With stop: how long to wait for a graceful stop. Default: 120.
    """

    name: str
    stop: bool | Unset = False
    timeout_seconds: int | Unset = 120

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        stop = self.stop

        timeout_seconds = self.timeout_seconds

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if stop is not UNSET:
            field_dict["stop"] = stop
        if timeout_seconds is not UNSET:
            field_dict["timeout_seconds"] = timeout_seconds

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        stop = d.pop("stop", UNSET)

        timeout_seconds = d.pop("timeout_seconds", UNSET)

        snapshot_body = cls(
            name=name,
            stop=stop,
            timeout_seconds=timeout_seconds,
        )

        return snapshot_body
