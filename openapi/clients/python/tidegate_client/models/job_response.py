from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.job_response_state import JobResponseState
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.restart_policy import RestartPolicy


T = TypeVar("T", bound="JobResponse")


@_attrs_define
class JobResponse:
    """
    Attributes:
        name (str):
        description (None | str):
        state (JobResponseState):
        restart_policy (RestartPolicy): PSTL's supervised exponential backoff. Defaults are PSTL's.
        revision (int): Send as If-Match (quoted) to PATCH safely.
        created_by (str):
        created_at (datetime.datetime):
        updated_at (datetime.datetime):
        prewarm (bool | Unset): Updates start the new version's driver as a standby while the old run processes, so the
            switch pays no driver start (it costs one more driver on the cluster for the switch's length); an update's own
            prewarm overrides this. Restarts too: the run's next attempt starts as a spare first. Default: True.
        hot_spare (bool | Unset): Keep a spare driver warm for the current run's next attempt (session built, Python
            started, waiting before its queries), so that after a driver crash the supervised restart takes over in seconds
            instead of paying a driver start. It costs one idle driver (its cores and memory) on the cluster for as long as
            the job runs; the run shows it (spare_*), and so does tidegate_job_standby_drivers. Default: False.
        latest_version (int | None | Unset):
        current_run_id (int | None | Unset):
        next_restart_at (datetime.datetime | None | Unset):
    """

    name: str
    description: None | str
    state: JobResponseState
    restart_policy: RestartPolicy
    revision: int
    created_by: str
    created_at: datetime.datetime
    updated_at: datetime.datetime
    prewarm: bool | Unset = True
    hot_spare: bool | Unset = False
    latest_version: int | None | Unset = UNSET
    current_run_id: int | None | Unset = UNSET
    next_restart_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        description: None | str
        description = self.description

        state = self.state.value

        restart_policy = self.restart_policy.to_dict()

        revision = self.revision

        created_by = self.created_by

        created_at = self.created_at.isoformat()

        updated_at = self.updated_at.isoformat()

        prewarm = self.prewarm

        hot_spare = self.hot_spare

        latest_version: int | None | Unset
        if isinstance(self.latest_version, Unset):
            latest_version = UNSET
        else:
            latest_version = self.latest_version

        current_run_id: int | None | Unset
        if isinstance(self.current_run_id, Unset):
            current_run_id = UNSET
        else:
            current_run_id = self.current_run_id

        next_restart_at: None | str | Unset
        if isinstance(self.next_restart_at, Unset):
            next_restart_at = UNSET
        elif isinstance(self.next_restart_at, datetime.datetime):
            next_restart_at = self.next_restart_at.isoformat()
        else:
            next_restart_at = self.next_restart_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "description": description,
                "state": state,
                "restart_policy": restart_policy,
                "revision": revision,
                "created_by": created_by,
                "created_at": created_at,
                "updated_at": updated_at,
            }
        )
        if prewarm is not UNSET:
            field_dict["prewarm"] = prewarm
        if hot_spare is not UNSET:
            field_dict["hot_spare"] = hot_spare
        if latest_version is not UNSET:
            field_dict["latest_version"] = latest_version
        if current_run_id is not UNSET:
            field_dict["current_run_id"] = current_run_id
        if next_restart_at is not UNSET:
            field_dict["next_restart_at"] = next_restart_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.restart_policy import RestartPolicy  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        def _parse_description(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        description = _parse_description(d.pop("description"))

        state = JobResponseState(d.pop("state"))

        restart_policy = RestartPolicy.from_dict(d.pop("restart_policy"))

        revision = d.pop("revision")

        created_by = d.pop("created_by")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        prewarm = d.pop("prewarm", UNSET)

        hot_spare = d.pop("hot_spare", UNSET)

        def _parse_latest_version(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        latest_version = _parse_latest_version(d.pop("latest_version", UNSET))

        def _parse_current_run_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        current_run_id = _parse_current_run_id(d.pop("current_run_id", UNSET))

        def _parse_next_restart_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_restart_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_restart_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        next_restart_at = _parse_next_restart_at(d.pop("next_restart_at", UNSET))

        job_response = cls(
            name=name,
            description=description,
            state=state,
            restart_policy=restart_policy,
            revision=revision,
            created_by=created_by,
            created_at=created_at,
            updated_at=updated_at,
            prewarm=prewarm,
            hot_spare=hot_spare,
            latest_version=latest_version,
            current_run_id=current_run_id,
            next_restart_at=next_restart_at,
        )

        job_response.additional_properties = d
        return job_response

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
