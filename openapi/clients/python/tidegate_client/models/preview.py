from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.preview_error import PreviewError
    from ..models.preview_late import PreviewLate
    from ..models.preview_row import PreviewRow


T = TypeVar("T", bound="Preview")


@_attrs_define
class Preview:
    """
    Attributes:
        rows (list[PreviewRow]):
        errors (list[PreviewError]):
        late (list[PreviewLate]): Per query that would replay records: its watermark and the records behind it.
    """

    rows: list[PreviewRow]
    errors: list[PreviewError]
    late: list[PreviewLate]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        rows = []
        for rows_item_data in self.rows:
            rows_item = rows_item_data.to_dict()
            rows.append(rows_item)

        errors = []
        for errors_item_data in self.errors:
            errors_item = errors_item_data.to_dict()
            errors.append(errors_item)

        late = []
        for late_item_data in self.late:
            late_item = late_item_data.to_dict()
            late.append(late_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "rows": rows,
                "errors": errors,
                "late": late,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.preview_error import PreviewError  # noqa: PLC0415
        from ..models.preview_late import PreviewLate  # noqa: PLC0415
        from ..models.preview_row import PreviewRow  # noqa: PLC0415

        d = dict(src_dict)
        rows = []
        _rows = d.pop("rows")
        for rows_item_data in _rows:
            rows_item = PreviewRow.from_dict(rows_item_data)

            rows.append(rows_item)

        errors = []
        _errors = d.pop("errors")
        for errors_item_data in _errors:
            errors_item = PreviewError.from_dict(errors_item_data)

            errors.append(errors_item)

        late = []
        _late = d.pop("late")
        for late_item_data in _late:
            late_item = PreviewLate.from_dict(late_item_data)

            late.append(late_item)

        preview = cls(
            rows=rows,
            errors=errors,
            late=late,
        )

        preview.additional_properties = d
        return preview

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
