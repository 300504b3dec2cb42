from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.step_detail_type_0 import StepDetailType0


T = TypeVar("T", bound="Step")


@_attrs_define
class Step:
    """
    Attributes:
        name (str):
        at (datetime.datetime):
        detail (None | StepDetailType0 | Unset):
    """

    name: str
    at: datetime.datetime
    detail: None | StepDetailType0 | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.step_detail_type_0 import StepDetailType0  # noqa: PLC0415

        name = self.name

        at = self.at.isoformat()

        detail: dict[str, Any] | None | Unset
        if isinstance(self.detail, Unset):
            detail = UNSET
        elif isinstance(self.detail, StepDetailType0):
            detail = self.detail.to_dict()
        else:
            detail = self.detail

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "at": at,
            }
        )
        if detail is not UNSET:
            field_dict["detail"] = detail

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.step_detail_type_0 import StepDetailType0  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        at = datetime.datetime.fromisoformat(d.pop("at"))

        def _parse_detail(data: object) -> None | StepDetailType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                detail_type_0 = StepDetailType0.from_dict(data)

                return detail_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StepDetailType0 | Unset, data)

        detail = _parse_detail(d.pop("detail", UNSET))

        step = cls(
            name=name,
            at=at,
            detail=detail,
        )

        step.additional_properties = d
        return step

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
