from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.run_response_drain_type_0 import RunResponseDrainType0
    from ..models.run_response_progress import RunResponseProgress
    from ..models.run_response_query_restarts import RunResponseQueryRestarts
    from ..models.spare_response import SpareResponse
    from ..models.transition_response import TransitionResponse


T = TypeVar("T", bound="RunResponse")


@_attrs_define
class RunResponse:
    """
    Attributes:
        id (int):
        job (str):
        version (int):
        cluster (str):
        state (str):
        stop_reason (None | str):
        attempt (int): Restarts of this run so far (0 for the first submission).
        failures (int): Failures since the run last stayed healthy (PSTL's n).
        backend_id (None | str):
        tag (str): The Spark app name / Livy batch name of the current attempt.
        observed_state (None | str):
        observed_at (datetime.datetime | None):
        last_error (None | str):
        next_restart_at (datetime.datetime | None):
        running_since (datetime.datetime | None):
        progress (RunResponseProgress): Latest progress per query: the driver's report of its last batch, plus
            rows_dropped_late (rows its stateful operators discarded as behind the watermark in that batch, summed over
            them; null when none reports it), rows_dropped_late_total (the same over every batch of this run, each batch
            counted once) and watermark_lead_seconds (the watermark minus the driver's clock at the batch's start: positive
            when the watermark runs ahead of the clock).
        created_by (str):
        created_at (datetime.datetime):
        ended_at (datetime.datetime | None):
        query_restarts (RunResponseQueryRestarts | Unset): Queries the driver restarted alone after they failed (the
            job's restart policy, per query), by name. The driver's own restarts are in attempt.
        drain (None | RunResponseDrainType0 | Unset): Drain: requested_at, end_offsets per source and partition,
            drained_at.
        standby_ready_at (datetime.datetime | None | Unset): A pre-warmed run (an update's prewarm): when its driver,
            started while the run it replaces still processed, was ready (session built, Python started).
        go_at (datetime.datetime | None | Unset): A pre-warmed run: when it was told to start its queries (the run it
            replaced had ended and its checkpoints were in place). Until then its state is standby and it is not its job's
            current run; it holds one idle driver.
        spare (None | SpareResponse | Unset): The run's spare, if it has one (a hot spare, or a pre-warmed restart's):
            its next attempt's driver, started ahead and waiting before its queries, which takes over when the current
            attempt ends. It holds one idle driver. Also shown when the last one failed (last_error, retry_at).
        transitions (list[TransitionResponse] | None | Unset): Recent state changes, newest first (single-run reads
            only).
    """

    id: int
    job: str
    version: int
    cluster: str
    state: str
    stop_reason: None | str
    attempt: int
    failures: int
    backend_id: None | str
    tag: str
    observed_state: None | str
    observed_at: datetime.datetime | None
    last_error: None | str
    next_restart_at: datetime.datetime | None
    running_since: datetime.datetime | None
    progress: RunResponseProgress
    created_by: str
    created_at: datetime.datetime
    ended_at: datetime.datetime | None
    query_restarts: RunResponseQueryRestarts | Unset = UNSET
    drain: None | RunResponseDrainType0 | Unset = UNSET
    standby_ready_at: datetime.datetime | None | Unset = UNSET
    go_at: datetime.datetime | None | Unset = UNSET
    spare: None | SpareResponse | Unset = UNSET
    transitions: list[TransitionResponse] | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.run_response_drain_type_0 import RunResponseDrainType0  # noqa: PLC0415
        from ..models.spare_response import SpareResponse  # noqa: PLC0415

        id = self.id

        job = self.job

        version = self.version

        cluster = self.cluster

        state = self.state

        stop_reason: None | str
        stop_reason = self.stop_reason

        attempt = self.attempt

        failures = self.failures

        backend_id: None | str
        backend_id = self.backend_id

        tag = self.tag

        observed_state: None | str
        observed_state = self.observed_state

        observed_at: None | str
        if isinstance(self.observed_at, datetime.datetime):
            observed_at = self.observed_at.isoformat()
        else:
            observed_at = self.observed_at

        last_error: None | str
        last_error = self.last_error

        next_restart_at: None | str
        if isinstance(self.next_restart_at, datetime.datetime):
            next_restart_at = self.next_restart_at.isoformat()
        else:
            next_restart_at = self.next_restart_at

        running_since: None | str
        if isinstance(self.running_since, datetime.datetime):
            running_since = self.running_since.isoformat()
        else:
            running_since = self.running_since

        progress = self.progress.to_dict()

        created_by = self.created_by

        created_at = self.created_at.isoformat()

        ended_at: None | str
        if isinstance(self.ended_at, datetime.datetime):
            ended_at = self.ended_at.isoformat()
        else:
            ended_at = self.ended_at

        query_restarts: dict[str, Any] | Unset = UNSET
        if not isinstance(self.query_restarts, Unset):
            query_restarts = self.query_restarts.to_dict()

        drain: dict[str, Any] | None | Unset
        if isinstance(self.drain, Unset):
            drain = UNSET
        elif isinstance(self.drain, RunResponseDrainType0):
            drain = self.drain.to_dict()
        else:
            drain = self.drain

        standby_ready_at: None | str | Unset
        if isinstance(self.standby_ready_at, Unset):
            standby_ready_at = UNSET
        elif isinstance(self.standby_ready_at, datetime.datetime):
            standby_ready_at = self.standby_ready_at.isoformat()
        else:
            standby_ready_at = self.standby_ready_at

        go_at: None | str | Unset
        if isinstance(self.go_at, Unset):
            go_at = UNSET
        elif isinstance(self.go_at, datetime.datetime):
            go_at = self.go_at.isoformat()
        else:
            go_at = self.go_at

        spare: dict[str, Any] | None | Unset
        if isinstance(self.spare, Unset):
            spare = UNSET
        elif isinstance(self.spare, SpareResponse):
            spare = self.spare.to_dict()
        else:
            spare = self.spare

        transitions: list[dict[str, Any]] | None | Unset
        if isinstance(self.transitions, Unset):
            transitions = UNSET
        elif isinstance(self.transitions, list):
            transitions = []
            for transitions_type_0_item_data in self.transitions:
                transitions_type_0_item = transitions_type_0_item_data.to_dict()
                transitions.append(transitions_type_0_item)

        else:
            transitions = self.transitions

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "job": job,
                "version": version,
                "cluster": cluster,
                "state": state,
                "stop_reason": stop_reason,
                "attempt": attempt,
                "failures": failures,
                "backend_id": backend_id,
                "tag": tag,
                "observed_state": observed_state,
                "observed_at": observed_at,
                "last_error": last_error,
                "next_restart_at": next_restart_at,
                "running_since": running_since,
                "progress": progress,
                "created_by": created_by,
                "created_at": created_at,
                "ended_at": ended_at,
            }
        )
        if query_restarts is not UNSET:
            field_dict["query_restarts"] = query_restarts
        if drain is not UNSET:
            field_dict["drain"] = drain
        if standby_ready_at is not UNSET:
            field_dict["standby_ready_at"] = standby_ready_at
        if go_at is not UNSET:
            field_dict["go_at"] = go_at
        if spare is not UNSET:
            field_dict["spare"] = spare
        if transitions is not UNSET:
            field_dict["transitions"] = transitions

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.run_response_drain_type_0 import RunResponseDrainType0  # noqa: PLC0415
        from ..models.run_response_progress import RunResponseProgress  # noqa: PLC0415
        from ..models.run_response_query_restarts import RunResponseQueryRestarts  # noqa: PLC0415
        from ..models.spare_response import SpareResponse  # noqa: PLC0415
        from ..models.transition_response import TransitionResponse  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        job = d.pop("job")

        version = d.pop("version")

        cluster = d.pop("cluster")

        state = d.pop("state")

        def _parse_stop_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        stop_reason = _parse_stop_reason(d.pop("stop_reason"))

        attempt = d.pop("attempt")

        failures = d.pop("failures")

        def _parse_backend_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        backend_id = _parse_backend_id(d.pop("backend_id"))

        tag = d.pop("tag")

        def _parse_observed_state(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        observed_state = _parse_observed_state(d.pop("observed_state"))

        def _parse_observed_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                observed_at_type_0 = datetime.datetime.fromisoformat(data)

                return observed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        observed_at = _parse_observed_at(d.pop("observed_at"))

        def _parse_last_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        last_error = _parse_last_error(d.pop("last_error"))

        def _parse_next_restart_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_restart_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_restart_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        next_restart_at = _parse_next_restart_at(d.pop("next_restart_at"))

        def _parse_running_since(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                running_since_type_0 = datetime.datetime.fromisoformat(data)

                return running_since_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        running_since = _parse_running_since(d.pop("running_since"))

        progress = RunResponseProgress.from_dict(d.pop("progress"))

        created_by = d.pop("created_by")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_ended_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                ended_at_type_0 = datetime.datetime.fromisoformat(data)

                return ended_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        ended_at = _parse_ended_at(d.pop("ended_at"))

        _query_restarts = d.pop("query_restarts", UNSET)
        query_restarts: RunResponseQueryRestarts | Unset
        if isinstance(_query_restarts, Unset):
            query_restarts = UNSET
        else:
            query_restarts = RunResponseQueryRestarts.from_dict(_query_restarts)

        def _parse_drain(data: object) -> None | RunResponseDrainType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                drain_type_0 = RunResponseDrainType0.from_dict(data)

                return drain_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RunResponseDrainType0 | Unset, data)

        drain = _parse_drain(d.pop("drain", UNSET))

        def _parse_standby_ready_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                standby_ready_at_type_0 = datetime.datetime.fromisoformat(data)

                return standby_ready_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        standby_ready_at = _parse_standby_ready_at(d.pop("standby_ready_at", UNSET))

        def _parse_go_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                go_at_type_0 = datetime.datetime.fromisoformat(data)

                return go_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        go_at = _parse_go_at(d.pop("go_at", UNSET))

        def _parse_spare(data: object) -> None | SpareResponse | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                spare_type_0 = SpareResponse.from_dict(data)

                return spare_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SpareResponse | Unset, data)

        spare = _parse_spare(d.pop("spare", UNSET))

        def _parse_transitions(data: object) -> list[TransitionResponse] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                transitions_type_0 = []
                _transitions_type_0 = data
                for transitions_type_0_item_data in _transitions_type_0:
                    transitions_type_0_item = TransitionResponse.from_dict(transitions_type_0_item_data)

                    transitions_type_0.append(transitions_type_0_item)

                return transitions_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[TransitionResponse] | None | Unset, data)

        transitions = _parse_transitions(d.pop("transitions", UNSET))

        run_response = cls(
            id=id,
            job=job,
            version=version,
            cluster=cluster,
            state=state,
            stop_reason=stop_reason,
            attempt=attempt,
            failures=failures,
            backend_id=backend_id,
            tag=tag,
            observed_state=observed_state,
            observed_at=observed_at,
            last_error=last_error,
            next_restart_at=next_restart_at,
            running_since=running_since,
            progress=progress,
            created_by=created_by,
            created_at=created_at,
            ended_at=ended_at,
            query_restarts=query_restarts,
            drain=drain,
            standby_ready_at=standby_ready_at,
            go_at=go_at,
            spare=spare,
            transitions=transitions,
        )

        run_response.additional_properties = d
        return run_response

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
