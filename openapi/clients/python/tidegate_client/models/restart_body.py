from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RestartBody")


@_attrs_define
class RestartBody:
    """
    Attributes:
        prewarm (bool | None | Unset): Default: the job's prewarm (true unless set otherwise). While the run runs, its
            next attempt's driver starts first as a spare (session built, Python started, waiting before its queries); the
            run then stops at a batch boundary and the spare takes over at once from the same checkpoint, so the output
            stands still for the stop and the first batch only. It needs room for one more driver on the cluster (a queued
            spare waits there; the run processes on). false: stop, then start again.
    """

    prewarm: bool | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        prewarm: bool | None | Unset
        if isinstance(self.prewarm, Unset):
            prewarm = UNSET
        else:
            prewarm = self.prewarm

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if prewarm is not UNSET:
            field_dict["prewarm"] = prewarm

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_prewarm(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        prewarm = _parse_prewarm(d.pop("prewarm", UNSET))

        restart_body = cls(
            prewarm=prewarm,
        )

        return restart_body
