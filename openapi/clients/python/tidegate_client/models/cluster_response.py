from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ClusterResponse")


@_attrs_define
class ClusterResponse:
    """
    Attributes:
        name (str):
        kind (str):
        url (str):
        master_url (None | str):
        ui_url (None | str):
        description (None | str):
        has_credentials (bool):
        created_at (datetime.datetime):
        reachable (bool | None | Unset): Checked on GET of one cluster by an operate or admin token (at most every 30 s
            per API process); null in lists and for read tokens.
        reachability_error (None | str | Unset):
    """

    name: str
    kind: str
    url: str
    master_url: None | str
    ui_url: None | str
    description: None | str
    has_credentials: bool
    created_at: datetime.datetime
    reachable: bool | None | Unset = UNSET
    reachability_error: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        kind = self.kind

        url = self.url

        master_url: None | str
        master_url = self.master_url

        ui_url: None | str
        ui_url = self.ui_url

        description: None | str
        description = self.description

        has_credentials = self.has_credentials

        created_at = self.created_at.isoformat()

        reachable: bool | None | Unset
        if isinstance(self.reachable, Unset):
            reachable = UNSET
        else:
            reachable = self.reachable

        reachability_error: None | str | Unset
        if isinstance(self.reachability_error, Unset):
            reachability_error = UNSET
        else:
            reachability_error = self.reachability_error

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "kind": kind,
                "url": url,
                "master_url": master_url,
                "ui_url": ui_url,
                "description": description,
                "has_credentials": has_credentials,
                "created_at": created_at,
            }
        )
        if reachable is not UNSET:
            field_dict["reachable"] = reachable
        if reachability_error is not UNSET:
            field_dict["reachability_error"] = reachability_error

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        kind = d.pop("kind")

        url = d.pop("url")

        def _parse_master_url(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        master_url = _parse_master_url(d.pop("master_url"))

        def _parse_ui_url(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        ui_url = _parse_ui_url(d.pop("ui_url"))

        def _parse_description(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        description = _parse_description(d.pop("description"))

        has_credentials = d.pop("has_credentials")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_reachable(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        reachable = _parse_reachable(d.pop("reachable", UNSET))

        def _parse_reachability_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reachability_error = _parse_reachability_error(d.pop("reachability_error", UNSET))

        cluster_response = cls(
            name=name,
            kind=kind,
            url=url,
            master_url=master_url,
            ui_url=ui_url,
            description=description,
            has_credentials=has_credentials,
            created_at=created_at,
            reachable=reachable,
            reachability_error=reachability_error,
        )

        cluster_response.additional_properties = d
        return cluster_response

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
