from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="SpareResponse")


@_attrs_define
class SpareResponse:
    """
    Attributes:
        attempt (int | None): The attempt it will become; null: none now.
        backend_id (None | str): Its driver on the backend (null: submitting).
        ready_at (datetime.datetime | None): When its runtime said it was ready.
        last_error (None | str): Why the last spare's driver ended, if it did.
        retry_at (datetime.datetime | None): No new spare before this (after a failure).
    """

    attempt: int | None
    backend_id: None | str
    ready_at: datetime.datetime | None
    last_error: None | str
    retry_at: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempt: int | None
        attempt = self.attempt

        backend_id: None | str
        backend_id = self.backend_id

        ready_at: None | str
        if isinstance(self.ready_at, datetime.datetime):
            ready_at = self.ready_at.isoformat()
        else:
            ready_at = self.ready_at

        last_error: None | str
        last_error = self.last_error

        retry_at: None | str
        if isinstance(self.retry_at, datetime.datetime):
            retry_at = self.retry_at.isoformat()
        else:
            retry_at = self.retry_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "backend_id": backend_id,
                "ready_at": ready_at,
                "last_error": last_error,
                "retry_at": retry_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_attempt(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        attempt = _parse_attempt(d.pop("attempt"))

        def _parse_backend_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        backend_id = _parse_backend_id(d.pop("backend_id"))

        def _parse_ready_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                ready_at_type_0 = datetime.datetime.fromisoformat(data)

                return ready_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        ready_at = _parse_ready_at(d.pop("ready_at"))

        def _parse_last_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        last_error = _parse_last_error(d.pop("last_error"))

        def _parse_retry_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                retry_at_type_0 = datetime.datetime.fromisoformat(data)

                return retry_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        retry_at = _parse_retry_at(d.pop("retry_at"))

        spare_response = cls(
            attempt=attempt,
            backend_id=backend_id,
            ready_at=ready_at,
            last_error=last_error,
            retry_at=retry_at,
        )

        spare_response.additional_properties = d
        return spare_response

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
