from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="QueryFailureReport")


@_attrs_define
class QueryFailureReport:
    """A query of the driver failed; the runtime restarts it alone (or gives up).

    Attributes:
        attempt (int): The attempt of the driver reporting.
        query (str):
        failures (int): Its failures in a row.
        error (str):
        restart_in_seconds (float | None | Unset): When the query restarts; null: it used up its restarts and the driver
            ends with its error.
    """

    attempt: int
    query: str
    failures: int
    error: str
    restart_in_seconds: float | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        query = self.query

        failures = self.failures

        error = self.error

        restart_in_seconds: float | None | Unset
        if isinstance(self.restart_in_seconds, Unset):
            restart_in_seconds = UNSET
        else:
            restart_in_seconds = self.restart_in_seconds

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "attempt": attempt,
                "query": query,
                "failures": failures,
                "error": error,
            }
        )
        if restart_in_seconds is not UNSET:
            field_dict["restart_in_seconds"] = restart_in_seconds

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempt = d.pop("attempt")

        query = d.pop("query")

        failures = d.pop("failures")

        error = d.pop("error")

        def _parse_restart_in_seconds(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        restart_in_seconds = _parse_restart_in_seconds(d.pop("restart_in_seconds", UNSET))

        query_failure_report = cls(
            attempt=attempt,
            query=query,
            failures=failures,
            error=error,
            restart_in_seconds=restart_in_seconds,
        )

        return query_failure_report
