from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.restart_policy import RestartPolicy


T = TypeVar("T", bound="JobCreate")


@_attrs_define
class JobCreate:
    """
    Attributes:
        name (str):
        description (None | str | Unset):
        restart_policy (RestartPolicy | Unset): PSTL's supervised exponential backoff. Defaults are PSTL's.
        prewarm (bool | Unset): Updates start the new version's driver as a standby while the old run processes, so the
            switch pays no driver start (it costs one more driver on the cluster for the switch's length); an update's own
            prewarm overrides this. Restarts too: the run's next attempt starts as a spare first. Default: True.
        hot_spare (bool | Unset): Keep a spare driver warm for the current run's next attempt (session built, Python
            started, waiting before its queries), so that after a driver crash the supervised restart takes over in seconds
            instead of paying a driver start. It costs one idle driver (its cores and memory) on the cluster for as long as
            the job runs; the run shows it (spare_*), and so does tidegate_job_standby_drivers. Default: False.
    """

    name: str
    description: None | str | Unset = UNSET
    restart_policy: RestartPolicy | Unset = UNSET
    prewarm: bool | Unset = True
    hot_spare: bool | Unset = False

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        restart_policy: dict[str, Any] | Unset = UNSET
        if not isinstance(self.restart_policy, Unset):
            restart_policy = self.restart_policy.to_dict()

        prewarm = self.prewarm

        hot_spare = self.hot_spare

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
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
        name = d.pop("name")

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        _restart_policy = d.pop("restart_policy", UNSET)
        restart_policy: RestartPolicy | Unset
        if isinstance(_restart_policy, Unset):
            restart_policy = UNSET
        else:
            restart_policy = RestartPolicy.from_dict(_restart_policy)

        prewarm = d.pop("prewarm", UNSET)

        hot_spare = d.pop("hot_spare", UNSET)

        job_create = cls(
            name=name,
            description=description,
            restart_policy=restart_policy,
            prewarm=prewarm,
            hot_spare=hot_spare,
        )

        return job_create
