from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.application_response import ApplicationResponse
    from ..models.startpoint_response import StartpointResponse


T = TypeVar("T", bound="StartpointsView")


@_attrs_define
class StartpointsView:
    """
    Attributes:
        pending (list[StartpointResponse]):
        applied (list[ApplicationResponse]): Recent applications, newest first.
    """

    pending: list[StartpointResponse]
    applied: list[ApplicationResponse]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        pending = []
        for pending_item_data in self.pending:
            pending_item = pending_item_data.to_dict()
            pending.append(pending_item)

        applied = []
        for applied_item_data in self.applied:
            applied_item = applied_item_data.to_dict()
            applied.append(applied_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "pending": pending,
                "applied": applied,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.application_response import ApplicationResponse  # noqa: PLC0415
        from ..models.startpoint_response import StartpointResponse  # noqa: PLC0415

        d = dict(src_dict)
        pending = []
        _pending = d.pop("pending")
        for pending_item_data in _pending:
            pending_item = StartpointResponse.from_dict(pending_item_data)

            pending.append(pending_item)

        applied = []
        _applied = d.pop("applied")
        for applied_item_data in _applied:
            applied_item = ApplicationResponse.from_dict(applied_item_data)

            applied.append(applied_item)

        startpoints_view = cls(
            pending=pending,
            applied=applied,
        )

        startpoints_view.additional_properties = d
        return startpoints_view

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
