from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.progress_response_payload import ProgressResponsePayload


T = TypeVar("T", bound="ProgressResponse")


@_attrs_define
class ProgressResponse:
    """
    Attributes:
        query (str):
        batch_id (int):
        at (datetime.datetime):
        payload (ProgressResponsePayload):
    """

    query: str
    batch_id: int
    at: datetime.datetime
    payload: ProgressResponsePayload
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        query = self.query

        batch_id = self.batch_id

        at = self.at.isoformat()

        payload = self.payload.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "query": query,
                "batch_id": batch_id,
                "at": at,
                "payload": payload,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.progress_response_payload import ProgressResponsePayload  # noqa: PLC0415

        d = dict(src_dict)
        query = d.pop("query")

        batch_id = d.pop("batch_id")

        at = datetime.datetime.fromisoformat(d.pop("at"))

        payload = ProgressResponsePayload.from_dict(d.pop("payload"))

        progress_response = cls(
            query=query,
            batch_id=batch_id,
            at=at,
            payload=payload,
        )

        progress_response.additional_properties = d
        return progress_response

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
