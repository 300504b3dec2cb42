from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.problem_errors_type_0_item import ProblemErrorsType0Item


T = TypeVar("T", bound="Problem")


@_attrs_define
class Problem:
    """An error, RFC 9457: ``detail`` says what went wrong and what to do about it.

    Attributes:
        title (str): The status's name, e.g. 'Conflict'.
        status (int): The HTTP status, repeated.
        detail (str): What went wrong, and what to do about it.
        type_ (str | Unset): Always about:blank: the status says it. Default: 'about:blank'.
        errors (list[ProblemErrorsType0Item] | None | Unset): 422: one entry per invalid field: {field, message}.
    """

    title: str
    status: int
    detail: str
    type_: str | Unset = "about:blank"
    errors: list[ProblemErrorsType0Item] | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        title = self.title

        status = self.status

        detail = self.detail

        type_ = self.type_

        errors: list[dict[str, Any]] | None | Unset
        if isinstance(self.errors, Unset):
            errors = UNSET
        elif isinstance(self.errors, list):
            errors = []
            for errors_type_0_item_data in self.errors:
                errors_type_0_item = errors_type_0_item_data.to_dict()
                errors.append(errors_type_0_item)

        else:
            errors = self.errors

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "title": title,
                "status": status,
                "detail": detail,
            }
        )
        if type_ is not UNSET:
            field_dict["type"] = type_
        if errors is not UNSET:
            field_dict["errors"] = errors

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.problem_errors_type_0_item import ProblemErrorsType0Item  # noqa: PLC0415

        d = dict(src_dict)
        title = d.pop("title")

        status = d.pop("status")

        detail = d.pop("detail")

        type_ = d.pop("type", UNSET)

        def _parse_errors(data: object) -> list[ProblemErrorsType0Item] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                errors_type_0 = []
                _errors_type_0 = data
                for errors_type_0_item_data in _errors_type_0:
                    errors_type_0_item = ProblemErrorsType0Item.from_dict(errors_type_0_item_data)

                    errors_type_0.append(errors_type_0_item)

                return errors_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[ProblemErrorsType0Item] | None | Unset, data)

        errors = _parse_errors(d.pop("errors", UNSET))

        problem = cls(
            title=title,
            status=status,
            detail=detail,
            type_=type_,
            errors=errors,
        )

        problem.additional_properties = d
        return problem

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
