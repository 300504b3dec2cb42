from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.directives_drain_type_0 import DirectivesDrainType0
    from ..models.directives_query_restart_policy_type_0 import DirectivesQueryRestartPolicyType0
    from ..models.directives_sink_options import DirectivesSinkOptions
    from ..models.directives_sources import DirectivesSources
    from ..models.directives_startpoints_item import DirectivesStartpointsItem


T = TypeVar("T", bound="Directives")


@_attrs_define
class Directives:
    """
    Attributes:
        run_id (int):
        attempt (int): The attempt the control plane considers current.
        state (str):
        stop (bool): Stop every query at a batch boundary, then exit.
        reason (None | str | Unset):
        drain (DirectivesDrainType0 | None | Unset): Drain request (end offsets).
        startpoints (list[DirectivesStartpointsItem] | Unset): Startpoints to apply before queries start.
        sources (DirectivesSources | Unset): The version's sources: kind and options, by name.
        sink_options (DirectivesSinkOptions | Unset): Per query, the options its declared sink must carry (the Spark
            conf holds only their names).
        query_restart_policy (DirectivesQueryRestartPolicyType0 | None | Unset): The job's restart policy in seconds,
            applied to each query alone: enabled, min_backoff_seconds, max_backoff_seconds, random_factor, max_attempts,
            stable_period_seconds.
    """

    run_id: int
    attempt: int
    state: str
    stop: bool
    reason: None | str | Unset = UNSET
    drain: DirectivesDrainType0 | None | Unset = UNSET
    startpoints: list[DirectivesStartpointsItem] | Unset = UNSET
    sources: DirectivesSources | Unset = UNSET
    sink_options: DirectivesSinkOptions | Unset = UNSET
    query_restart_policy: DirectivesQueryRestartPolicyType0 | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.directives_drain_type_0 import DirectivesDrainType0  # noqa: PLC0415
        from ..models.directives_query_restart_policy_type_0 import DirectivesQueryRestartPolicyType0  # noqa: PLC0415

        run_id = self.run_id

        attempt = self.attempt

        state = self.state

        stop = self.stop

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        drain: dict[str, Any] | None | Unset
        if isinstance(self.drain, Unset):
            drain = UNSET
        elif isinstance(self.drain, DirectivesDrainType0):
            drain = self.drain.to_dict()
        else:
            drain = self.drain

        startpoints: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.startpoints, Unset):
            startpoints = []
            for startpoints_item_data in self.startpoints:
                startpoints_item = startpoints_item_data.to_dict()
                startpoints.append(startpoints_item)

        sources: dict[str, Any] | Unset = UNSET
        if not isinstance(self.sources, Unset):
            sources = self.sources.to_dict()

        sink_options: dict[str, Any] | Unset = UNSET
        if not isinstance(self.sink_options, Unset):
            sink_options = self.sink_options.to_dict()

        query_restart_policy: dict[str, Any] | None | Unset
        if isinstance(self.query_restart_policy, Unset):
            query_restart_policy = UNSET
        elif isinstance(self.query_restart_policy, DirectivesQueryRestartPolicyType0):
            query_restart_policy = self.query_restart_policy.to_dict()
        else:
            query_restart_policy = self.query_restart_policy

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "run_id": run_id,
                "attempt": attempt,
                "state": state,
                "stop": stop,
            }
        )
        if reason is not UNSET:
            field_dict["reason"] = reason
        if drain is not UNSET:
            field_dict["drain"] = drain
        if startpoints is not UNSET:
            field_dict["startpoints"] = startpoints
        if sources is not UNSET:
            field_dict["sources"] = sources
        if sink_options is not UNSET:
            field_dict["sink_options"] = sink_options
        if query_restart_policy is not UNSET:
            field_dict["query_restart_policy"] = query_restart_policy

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.directives_drain_type_0 import DirectivesDrainType0  # noqa: PLC0415
        from ..models.directives_query_restart_policy_type_0 import DirectivesQueryRestartPolicyType0  # noqa: PLC0415
        from ..models.directives_sink_options import DirectivesSinkOptions  # noqa: PLC0415
        from ..models.directives_sources import DirectivesSources  # noqa: PLC0415
        from ..models.directives_startpoints_item import DirectivesStartpointsItem  # noqa: PLC0415

        d = dict(src_dict)
        run_id = d.pop("run_id")

        attempt = d.pop("attempt")

        state = d.pop("state")

        stop = d.pop("stop")

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))

        def _parse_drain(data: object) -> DirectivesDrainType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                drain_type_0 = DirectivesDrainType0.from_dict(data)

                return drain_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DirectivesDrainType0 | None | Unset, data)

        drain = _parse_drain(d.pop("drain", UNSET))

        _startpoints = d.pop("startpoints", UNSET)
        startpoints: list[DirectivesStartpointsItem] | Unset = UNSET
        if _startpoints is not UNSET:
            startpoints = []
            for startpoints_item_data in _startpoints:
                startpoints_item = DirectivesStartpointsItem.from_dict(startpoints_item_data)

                startpoints.append(startpoints_item)

        _sources = d.pop("sources", UNSET)
        sources: DirectivesSources | Unset
        if isinstance(_sources, Unset):
            sources = UNSET
        else:
            sources = DirectivesSources.from_dict(_sources)

        _sink_options = d.pop("sink_options", UNSET)
        sink_options: DirectivesSinkOptions | Unset
        if isinstance(_sink_options, Unset):
            sink_options = UNSET
        else:
            sink_options = DirectivesSinkOptions.from_dict(_sink_options)

        def _parse_query_restart_policy(data: object) -> DirectivesQueryRestartPolicyType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                query_restart_policy_type_0 = DirectivesQueryRestartPolicyType0.from_dict(data)

                return query_restart_policy_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DirectivesQueryRestartPolicyType0 | None | Unset, data)

        query_restart_policy = _parse_query_restart_policy(d.pop("query_restart_policy", UNSET))

        directives = cls(
            run_id=run_id,
            attempt=attempt,
            state=state,
            stop=stop,
            reason=reason,
            drain=drain,
            startpoints=startpoints,
            sources=sources,
            sink_options=sink_options,
            query_restart_policy=query_restart_policy,
        )

        directives.additional_properties = d
        return directives

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
