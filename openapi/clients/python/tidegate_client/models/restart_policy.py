from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RestartPolicy")


@_attrs_define
class RestartPolicy:
    """PSTL's supervised exponential backoff. Defaults are PSTL's.

    Attributes:
        enabled (bool | Unset):  Default: True.
        min_backoff (str | Unset):  Default: '1s'.
        max_backoff (str | Unset):  Default: '1h'.
        random_factor (float | Unset):  Default: 0.0.
        max_attempts (int | None | Unset): Restarts before the job is failed; null = unlimited.
        stable_period (str | Unset): A run healthy this long resets the failure count. Default: '1m'.
    """

    enabled: bool | Unset = True
    min_backoff: str | Unset = "1s"
    max_backoff: str | Unset = "1h"
    random_factor: float | Unset = 0.0
    max_attempts: int | None | Unset = UNSET
    stable_period: str | Unset = "1m"

    def to_dict(self) -> dict[str, Any]:
        enabled = self.enabled

        min_backoff = self.min_backoff

        max_backoff = self.max_backoff

        random_factor = self.random_factor

        max_attempts: int | None | Unset
        if isinstance(self.max_attempts, Unset):
            max_attempts = UNSET
        else:
            max_attempts = self.max_attempts

        stable_period = self.stable_period

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if enabled is not UNSET:
            field_dict["enabled"] = enabled
        if min_backoff is not UNSET:
            field_dict["min_backoff"] = min_backoff
        if max_backoff is not UNSET:
            field_dict["max_backoff"] = max_backoff
        if random_factor is not UNSET:
            field_dict["random_factor"] = random_factor
        if max_attempts is not UNSET:
            field_dict["max_attempts"] = max_attempts
        if stable_period is not UNSET:
            field_dict["stable_period"] = stable_period

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        enabled = d.pop("enabled", UNSET)

        min_backoff = d.pop("min_backoff", UNSET)

        max_backoff = d.pop("max_backoff", UNSET)

        random_factor = d.pop("random_factor", UNSET)

        def _parse_max_attempts(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_attempts = _parse_max_attempts(d.pop("max_attempts", UNSET))

        stable_period = d.pop("stable_period", UNSET)

        restart_policy = cls(
            enabled=enabled,
            min_backoff=min_backoff,
            max_backoff=max_backoff,
            random_factor=random_factor,
            max_attempts=max_attempts,
            stable_period=stable_period,
        )

        return restart_policy
