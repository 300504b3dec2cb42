from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.coordinates import Coordinates


T = TypeVar("T", bound="BuildBody")


@_attrs_define
class BuildBody:
    """
    Attributes:
        version (int): The version to start.
        snapshot (None | str | Unset): Map every query to this snapshot.
        snapshot_job (None | str | Unset): The snapshot's job; default this job.
        coordinates (list[Coordinates] | None | Unset): Map to these run coordinates (GET …/snapshot-coordinates).
    """

    version: int
    snapshot: None | str | Unset = UNSET
    snapshot_job: None | str | Unset = UNSET
    coordinates: list[Coordinates] | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        version = self.version

        snapshot: None | str | Unset
        if isinstance(self.snapshot, Unset):
            snapshot = UNSET
        else:
            snapshot = self.snapshot

        snapshot_job: None | str | Unset
        if isinstance(self.snapshot_job, Unset):
            snapshot_job = UNSET
        else:
            snapshot_job = self.snapshot_job

        coordinates: list[dict[str, Any]] | None | Unset
        if isinstance(self.coordinates, Unset):
            coordinates = UNSET
        elif isinstance(self.coordinates, list):
            coordinates = []
            for coordinates_type_0_item_data in self.coordinates:
                coordinates_type_0_item = coordinates_type_0_item_data.to_dict()
                coordinates.append(coordinates_type_0_item)

        else:
            coordinates = self.coordinates

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "version": version,
            }
        )
        if snapshot is not UNSET:
            field_dict["snapshot"] = snapshot
        if snapshot_job is not UNSET:
            field_dict["snapshot_job"] = snapshot_job
        if coordinates is not UNSET:
            field_dict["coordinates"] = coordinates

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.coordinates import Coordinates  # noqa: PLC0415

        d = dict(src_dict)
        version = d.pop("version")

        def _parse_snapshot(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        snapshot = _parse_snapshot(d.pop("snapshot", UNSET))

        def _parse_snapshot_job(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        snapshot_job = _parse_snapshot_job(d.pop("snapshot_job", UNSET))

        def _parse_coordinates(data: object) -> list[Coordinates] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                coordinates_type_0 = []
                _coordinates_type_0 = data
                for coordinates_type_0_item_data in _coordinates_type_0:
                    coordinates_type_0_item = Coordinates.from_dict(coordinates_type_0_item_data)

                    coordinates_type_0.append(coordinates_type_0_item)

                return coordinates_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[Coordinates] | None | Unset, data)

        coordinates = _parse_coordinates(d.pop("coordinates", UNSET))

        build_body = cls(
            version=version,
            snapshot=snapshot,
            snapshot_job=snapshot_job,
            coordinates=coordinates,
        )

        return build_body
