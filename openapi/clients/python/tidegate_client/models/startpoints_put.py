from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.startpoint_set import StartpointSet


T = TypeVar("T", bound="StartpointsPut")


@_attrs_define
class StartpointsPut:
    """
    Attributes:
        startpoints (list[StartpointSet]):
        restart (bool | Unset): Also restart the job now so the startpoints apply at once. Default: False.
    """

    startpoints: list[StartpointSet]
    restart: bool | Unset = False

    def to_dict(self) -> dict[str, Any]:
        startpoints = []
        for startpoints_item_data in self.startpoints:
            startpoints_item = startpoints_item_data.to_dict()
            startpoints.append(startpoints_item)

        restart = self.restart

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "startpoints": startpoints,
            }
        )
        if restart is not UNSET:
            field_dict["restart"] = restart

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.startpoint_set import StartpointSet  # noqa: PLC0415

        d = dict(src_dict)
        startpoints = []
        _startpoints = d.pop("startpoints")
        for startpoints_item_data in _startpoints:
            startpoints_item = StartpointSet.from_dict(startpoints_item_data)

            startpoints.append(startpoints_item)

        restart = d.pop("restart", UNSET)

        startpoints_put = cls(
            startpoints=startpoints,
            restart=restart,
        )

        return startpoints_put
