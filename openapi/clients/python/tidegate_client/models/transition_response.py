from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="TransitionResponse")


@_attrs_define
class TransitionResponse:
    """
    Attributes:
        at (datetime.datetime):
        from_state (None | str):
        to_state (str):
        reason (None | str):
    """

    at: datetime.datetime
    from_state: None | str
    to_state: str
    reason: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        from_state: None | str
        from_state = self.from_state

        to_state = self.to_state

        reason: None | str
        reason = self.reason

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "from_state": from_state,
                "to_state": to_state,
                "reason": reason,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = datetime.datetime.fromisoformat(d.pop("at"))

        def _parse_from_state(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        from_state = _parse_from_state(d.pop("from_state"))

        to_state = d.pop("to_state")

        def _parse_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        reason = _parse_reason(d.pop("reason"))

        transition_response = cls(
            at=at,
            from_state=from_state,
            to_state=to_state,
            reason=reason,
        )

        transition_response.additional_properties = d
        return transition_response

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
