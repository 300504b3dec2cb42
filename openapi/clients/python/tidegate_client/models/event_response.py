from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.event_response_detail_type_0 import EventResponseDetailType0


T = TypeVar("T", bound="EventResponse")


@_attrs_define
class EventResponse:
    """
    Attributes:
        id (int):
        at (datetime.datetime):
        actor (str):
        actor_token_id (int | None): The id of the stored token that acted (GET /api/v1/tokens); null for the bootstrap
            admin token and for tidegate itself. The actor name is the token's name, which is free text.
        action (str):
        job (None | str):
        target (None | str):
        result (str):
        status_code (int):
        detail (EventResponseDetailType0 | None):
        request_id (None | str):
    """

    id: int
    at: datetime.datetime
    actor: str
    actor_token_id: int | None
    action: str
    job: None | str
    target: None | str
    result: str
    status_code: int
    detail: EventResponseDetailType0 | None
    request_id: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.event_response_detail_type_0 import EventResponseDetailType0  # noqa: PLC0415

        id = self.id

        at = self.at.isoformat()

        actor = self.actor

        actor_token_id: int | None
        actor_token_id = self.actor_token_id

        action = self.action

        job: None | str
        job = self.job

        target: None | str
        target = self.target

        result = self.result

        status_code = self.status_code

        detail: dict[str, Any] | None
        if isinstance(self.detail, EventResponseDetailType0):
            detail = self.detail.to_dict()
        else:
            detail = self.detail

        request_id: None | str
        request_id = self.request_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "at": at,
                "actor": actor,
                "actor_token_id": actor_token_id,
                "action": action,
                "job": job,
                "target": target,
                "result": result,
                "status_code": status_code,
                "detail": detail,
                "request_id": request_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.event_response_detail_type_0 import EventResponseDetailType0  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        at = datetime.datetime.fromisoformat(d.pop("at"))

        actor = d.pop("actor")

        def _parse_actor_token_id(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        actor_token_id = _parse_actor_token_id(d.pop("actor_token_id"))

        action = d.pop("action")

        def _parse_job(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        job = _parse_job(d.pop("job"))

        def _parse_target(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        target = _parse_target(d.pop("target"))

        result = d.pop("result")

        status_code = d.pop("status_code")

        def _parse_detail(data: object) -> EventResponseDetailType0 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                detail_type_0 = EventResponseDetailType0.from_dict(data)

                return detail_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EventResponseDetailType0 | None, data)

        detail = _parse_detail(d.pop("detail"))

        def _parse_request_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        request_id = _parse_request_id(d.pop("request_id"))

        event_response = cls(
            id=id,
            at=at,
            actor=actor,
            actor_token_id=actor_token_id,
            action=action,
            job=job,
            target=target,
            result=result,
            status_code=status_code,
            detail=detail,
            request_id=request_id,
        )

        event_response.additional_properties = d
        return event_response

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
