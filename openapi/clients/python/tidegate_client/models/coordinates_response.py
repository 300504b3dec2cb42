from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.coordinates import Coordinates


T = TypeVar("T", bound="CoordinatesResponse")


@_attrs_define
class CoordinatesResponse:
    """
    Attributes:
        job (str):
        run (int):
        version (int):
        run_state (str):
        coordinates (list[Coordinates]):
        uncommitted (list[str]): Queries with no committed batch yet.
    """

    job: str
    run: int
    version: int
    run_state: str
    coordinates: list[Coordinates]
    uncommitted: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job = self.job

        run = self.run

        version = self.version

        run_state = self.run_state

        coordinates = []
        for coordinates_item_data in self.coordinates:
            coordinates_item = coordinates_item_data.to_dict()
            coordinates.append(coordinates_item)

        uncommitted = self.uncommitted

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job": job,
                "run": run,
                "version": version,
                "run_state": run_state,
                "coordinates": coordinates,
                "uncommitted": uncommitted,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.coordinates import Coordinates  # noqa: PLC0415

        d = dict(src_dict)
        job = d.pop("job")

        run = d.pop("run")

        version = d.pop("version")

        run_state = d.pop("run_state")

        coordinates = []
        _coordinates = d.pop("coordinates")
        for coordinates_item_data in _coordinates:
            coordinates_item = Coordinates.from_dict(coordinates_item_data)

            coordinates.append(coordinates_item)

        uncommitted = cast(list[str], d.pop("uncommitted"))

        coordinates_response = cls(
            job=job,
            run=run,
            version=version,
            run_state=run_state,
            coordinates=coordinates,
            uncommitted=uncommitted,
        )

        coordinates_response.additional_properties = d
        return coordinates_response

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
