from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="SnapshotUseResponse")


@_attrs_define
class SnapshotUseResponse:
    """
    Attributes:
        run_id (int):
        job (str):
        run_state (str):
        query (str):
        source_query (str):
        parts (str):
        at (datetime.datetime):
    """

    run_id: int
    job: str
    run_state: str
    query: str
    source_query: str
    parts: str
    at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        run_id = self.run_id

        job = self.job

        run_state = self.run_state

        query = self.query

        source_query = self.source_query

        parts = self.parts

        at = self.at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "run_id": run_id,
                "job": job,
                "run_state": run_state,
                "query": query,
                "source_query": source_query,
                "parts": parts,
                "at": at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        run_id = d.pop("run_id")

        job = d.pop("job")

        run_state = d.pop("run_state")

        query = d.pop("query")

        source_query = d.pop("source_query")

        parts = d.pop("parts")

        at = datetime.datetime.fromisoformat(d.pop("at"))

        snapshot_use_response = cls(
            run_id=run_id,
            job=job,
            run_state=run_state,
            query=query,
            source_query=source_query,
            parts=parts,
            at=at,
        )

        snapshot_use_response.additional_properties = d
        return snapshot_use_response

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
