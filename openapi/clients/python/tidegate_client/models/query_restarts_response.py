from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="QueryRestartsResponse")


@_attrs_define
class QueryRestartsResponse:
    """
    Attributes:
        restarts (int): Times the driver restarted this query alone, this run.
        failures (int): Failures since the query last stayed up the restart policy's stable_period (what its backoff and
            max_attempts count).
        last_error (None | str): The error of its last failure.
        last_failed_at (datetime.datetime | None):
        next_restart_at (datetime.datetime | None): When it restarts (null: it is running, or it gave up).
        gave_up (bool): It failed more than max_attempts times in a row: the driver ended with its error, and the run's
            own restart policy took over.
    """

    restarts: int
    failures: int
    last_error: None | str
    last_failed_at: datetime.datetime | None
    next_restart_at: datetime.datetime | None
    gave_up: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        restarts = self.restarts

        failures = self.failures

        last_error: None | str
        last_error = self.last_error

        last_failed_at: None | str
        if isinstance(self.last_failed_at, datetime.datetime):
            last_failed_at = self.last_failed_at.isoformat()
        else:
            last_failed_at = self.last_failed_at

        next_restart_at: None | str
        if isinstance(self.next_restart_at, datetime.datetime):
            next_restart_at = self.next_restart_at.isoformat()
        else:
            next_restart_at = self.next_restart_at

        gave_up = self.gave_up

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "restarts": restarts,
                "failures": failures,
                "last_error": last_error,
                "last_failed_at": last_failed_at,
                "next_restart_at": next_restart_at,
                "gave_up": gave_up,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        restarts = d.pop("restarts")

        failures = d.pop("failures")

        def _parse_last_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        last_error = _parse_last_error(d.pop("last_error"))

        def _parse_last_failed_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_failed_at_type_0 = datetime.datetime.fromisoformat(data)

                return last_failed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        last_failed_at = _parse_last_failed_at(d.pop("last_failed_at"))

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

        gave_up = d.pop("gave_up")

        query_restarts_response = cls(
            restarts=restarts,
            failures=failures,
            last_error=last_error,
            last_failed_at=last_failed_at,
            next_restart_at=next_restart_at,
            gave_up=gave_up,
        )

        query_restarts_response.additional_properties = d
        return query_restarts_response

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
