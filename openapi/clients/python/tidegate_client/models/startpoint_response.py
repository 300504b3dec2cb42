from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.startpoint_response_state import StartpointResponseState
from ..models.startpoint_response_type import StartpointResponseType

T = TypeVar("T", bound="StartpointResponse")


@_attrs_define
class StartpointResponse:
    """
    Attributes:
        id (int):
        source (str):
        partition (int | None):
        type_ (StartpointResponseType):
        value (int | None):
        state (StartpointResponseState):
        created_by (str):
        created_at (datetime.datetime):
        updated_at (datetime.datetime):
    """

    id: int
    source: str
    partition: int | None
    type_: StartpointResponseType
    value: int | None
    state: StartpointResponseState
    created_by: str
    created_at: datetime.datetime
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        source = self.source

        partition: int | None
        partition = self.partition

        type_ = self.type_.value

        value: int | None
        value = self.value

        state = self.state.value

        created_by = self.created_by

        created_at = self.created_at.isoformat()

        updated_at = self.updated_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "source": source,
                "partition": partition,
                "type": type_,
                "value": value,
                "state": state,
                "created_by": created_by,
                "created_at": created_at,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        source = d.pop("source")

        def _parse_partition(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        partition = _parse_partition(d.pop("partition"))

        type_ = StartpointResponseType(d.pop("type"))

        def _parse_value(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        value = _parse_value(d.pop("value"))

        state = StartpointResponseState(d.pop("state"))

        created_by = d.pop("created_by")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        startpoint_response = cls(
            id=id,
            source=source,
            partition=partition,
            type_=type_,
            value=value,
            state=state,
            created_by=created_by,
            created_at=created_at,
            updated_at=updated_at,
        )

        startpoint_response.additional_properties = d
        return startpoint_response

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
