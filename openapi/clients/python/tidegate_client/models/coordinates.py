from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Coordinates")


@_attrs_define
class Coordinates:
    """Onyx's snapshot coordinates, for Spark: one committed batch of one query's checkpoint.

    Attributes:
        job (str):
        run (int):
        query (str):
        batch_id (int):
    """

    job: str
    run: int
    query: str
    batch_id: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job = self.job

        run = self.run

        query = self.query

        batch_id = self.batch_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job": job,
                "run": run,
                "query": query,
                "batch_id": batch_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        job = d.pop("job")

        run = d.pop("run")

        query = d.pop("query")

        batch_id = d.pop("batch_id")

        coordinates = cls(
            job=job,
            run=run,
            query=query,
            batch_id=batch_id,
        )

        coordinates.additional_properties = d
        return coordinates

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
