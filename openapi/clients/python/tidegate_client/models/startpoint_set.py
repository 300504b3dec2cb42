from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.startpoint_set_type import StartpointSetType
from ..types import UNSET, Unset

T = TypeVar("T", bound="StartpointSet")


@_attrs_define
class StartpointSet:
    """
    Attributes:
        source (str): A source name declared by the job's current version.
        type_ (StartpointSetType):
        partition (int | None | Unset): Omitted: every partition of the source.
        value (int | None | str | Unset): OFFSET: the next offset to read. TIMESTAMP: epoch milliseconds or ISO-8601;
            resolved to the first record at or after it. None for OLDEST/UPCOMING.
    """

    source: str
    type_: StartpointSetType
    partition: int | None | Unset = UNSET
    value: int | None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        source = self.source

        type_ = self.type_.value

        partition: int | None | Unset
        if isinstance(self.partition, Unset):
            partition = UNSET
        else:
            partition = self.partition

        value: int | None | str | Unset
        if isinstance(self.value, Unset):
            value = UNSET
        else:
            value = self.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "source": source,
                "type": type_,
            }
        )
        if partition is not UNSET:
            field_dict["partition"] = partition
        if value is not UNSET:
            field_dict["value"] = value

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        source = d.pop("source")

        type_ = StartpointSetType(d.pop("type"))

        def _parse_partition(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        partition = _parse_partition(d.pop("partition", UNSET))

        def _parse_value(data: object) -> int | None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | str | Unset, data)

        value = _parse_value(d.pop("value", UNSET))

        startpoint_set = cls(
            source=source,
            type_=type_,
            partition=partition,
            value=value,
        )

        return startpoint_set
