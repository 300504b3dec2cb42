from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.application_response import ApplicationResponse
    from ..models.startpoint_response import StartpointResponse


T = TypeVar("T", bound="StartpointsView")


@_attrs_define
class StartpointsView:
    """
    Attributes:
        pending (list[StartpointResponse]): Pending and applied startpoints, by source and partition: one page.
        applied (list[ApplicationResponse]): Recent applications, newest first.
        next_cursor (None | str | Unset): More pending startpoints: pass as `cursor` for the next page (the same
            `applied` comes with every page); null on the last page.
    """

    pending: list[StartpointResponse]
    applied: list[ApplicationResponse]
    next_cursor: None | str | Unset = UNSET
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

        next_cursor: None | str | Unset
        if isinstance(self.next_cursor, Unset):
            next_cursor = UNSET
        else:
            next_cursor = self.next_cursor

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "pending": pending,
                "applied": applied,
            }
        )
        if next_cursor is not UNSET:
            field_dict["next_cursor"] = next_cursor

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

        def _parse_next_cursor(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        next_cursor = _parse_next_cursor(d.pop("next_cursor", UNSET))

        startpoints_view = cls(
            pending=pending,
            applied=applied,
            next_cursor=next_cursor,
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
