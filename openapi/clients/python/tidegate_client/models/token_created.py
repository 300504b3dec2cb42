from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="TokenCreated")


@_attrs_define
class TokenCreated:
    """
    Attributes:
        id (int):
        name (str):
        scope (str):
        prefix (str):
        run_id (int | None):
        created_at (datetime.datetime):
        expires_at (datetime.datetime | None):
        revoked_at (datetime.datetime | None):
        token (str): The secret. Shown once; store it now.
    """

    id: int
    name: str
    scope: str
    prefix: str
    run_id: int | None
    created_at: datetime.datetime
    expires_at: datetime.datetime | None
    revoked_at: datetime.datetime | None
    token: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        name = self.name

        scope = self.scope

        prefix = self.prefix

        run_id: int | None
        run_id = self.run_id

        created_at = self.created_at.isoformat()

        expires_at: None | str
        if isinstance(self.expires_at, datetime.datetime):
            expires_at = self.expires_at.isoformat()
        else:
            expires_at = self.expires_at

        revoked_at: None | str
        if isinstance(self.revoked_at, datetime.datetime):
            revoked_at = self.revoked_at.isoformat()
        else:
            revoked_at = self.revoked_at

        token = self.token

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "name": name,
                "scope": scope,
                "prefix": prefix,
                "run_id": run_id,
                "created_at": created_at,
                "expires_at": expires_at,
                "revoked_at": revoked_at,
                "token": token,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        name = d.pop("name")

        scope = d.pop("scope")

        prefix = d.pop("prefix")

        def _parse_run_id(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        run_id = _parse_run_id(d.pop("run_id"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_expires_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                expires_at_type_0 = datetime.datetime.fromisoformat(data)

                return expires_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        expires_at = _parse_expires_at(d.pop("expires_at"))

        def _parse_revoked_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                revoked_at_type_0 = datetime.datetime.fromisoformat(data)

                return revoked_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        revoked_at = _parse_revoked_at(d.pop("revoked_at"))

        token = d.pop("token")

        token_created = cls(
            id=id,
            name=name,
            scope=scope,
            prefix=prefix,
            run_id=run_id,
            created_at=created_at,
            expires_at=expires_at,
            revoked_at=revoked_at,
            token=token,
        )

        token_created.additional_properties = d
        return token_created

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
