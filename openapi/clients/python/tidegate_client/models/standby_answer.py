from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="StandbyAnswer")


@_attrs_define
class StandbyAnswer:
    """What a standby driver hears: go (start its queries), stop (exit: it is released), or
    neither yet (ask again).

        Attributes:
            run_id (int):
            attempt (int): The attempt the control plane considers current.
            state (str):
            go (bool): Start the queries: the run it replaces has ended.
            stop (bool): Exit without starting anything: go will not come.
            reason (None | str | Unset):
    """

    run_id: int
    attempt: int
    state: str
    go: bool
    stop: bool
    reason: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        run_id = self.run_id

        attempt = self.attempt

        state = self.state

        go = self.go

        stop = self.stop

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "run_id": run_id,
                "attempt": attempt,
                "state": state,
                "go": go,
                "stop": stop,
            }
        )
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        run_id = d.pop("run_id")

        attempt = d.pop("attempt")

        state = d.pop("state")

        go = d.pop("go")

        stop = d.pop("stop")

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))

        standby_answer = cls(
            run_id=run_id,
            attempt=attempt,
            state=state,
            go=go,
            stop=stop,
            reason=reason,
        )

        standby_answer.additional_properties = d
        return standby_answer

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
