from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.restart_policy import RestartPolicy


T = TypeVar("T", bound="JobUpdate")


@_attrs_define
class JobUpdate:
    """
    Attributes:
        description (None | str | Unset):
        restart_policy (None | RestartPolicy | Unset):
        prewarm (bool | None | Unset): Updates start the new version's driver as a standby while the old run processes,
            so the switch pays no driver start (it costs one more driver on the cluster for the switch's length); an
            update's own prewarm overrides this. Restarts too: the run's next attempt starts as a spare first.
        hot_spare (bool | None | Unset): Keep a spare driver warm for the current run's next attempt (session built,
            Python started, waiting before its queries), so that after a driver crash the supervised restart takes over in
            seconds instead of paying a driver start. It costs one idle driver (its cores and memory) on the cluster for as
            long as the job runs; the run shows it (spare_*), and so does tidegate_job_standby_drivers.
    """

    description: None | str | Unset = UNSET
    restart_policy: None | RestartPolicy | Unset = UNSET
    prewarm: bool | None | Unset = UNSET
    hot_spare: bool | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.restart_policy import RestartPolicy  # noqa: PLC0415

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        restart_policy: dict[str, Any] | None | Unset
        if isinstance(self.restart_policy, Unset):
            restart_policy = UNSET
        elif isinstance(self.restart_policy, RestartPolicy):
            restart_policy = self.restart_policy.to_dict()
        else:
            restart_policy = self.restart_policy

        prewarm: bool | None | Unset
        if isinstance(self.prewarm, Unset):
            prewarm = UNSET
        else:
            prewarm = self.prewarm

        hot_spare: bool | None | Unset
        if isinstance(self.hot_spare, Unset):
            hot_spare = UNSET
        else:
            hot_spare = self.hot_spare

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if description is not UNSET:
            field_dict["description"] = description
        if restart_policy is not UNSET:
            field_dict["restart_policy"] = restart_policy
        if prewarm is not UNSET:
            field_dict["prewarm"] = prewarm
        if hot_spare is not UNSET:
            field_dict["hot_spare"] = hot_spare

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.restart_policy import RestartPolicy  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        def _parse_restart_policy(data: object) -> None | RestartPolicy | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                restart_policy_type_0 = RestartPolicy.from_dict(data)

                return restart_policy_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RestartPolicy | Unset, data)

        restart_policy = _parse_restart_policy(d.pop("restart_policy", UNSET))

        def _parse_prewarm(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        prewarm = _parse_prewarm(d.pop("prewarm", UNSET))

        def _parse_hot_spare(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        hot_spare = _parse_hot_spare(d.pop("hot_spare", UNSET))

        job_update = cls(
            description=description,
            restart_policy=restart_policy,
            prewarm=prewarm,
            hot_spare=hot_spare,
        )

        return job_update
