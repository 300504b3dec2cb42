from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.source_spec_options import SourceSpecOptions


T = TypeVar("T", bound="SourceSpec")


@_attrs_define
class SourceSpec:
    """
    Attributes:
        name (str): Unique within the job; startpoints address sources by it.
        kind (str):
        options (SourceSpecOptions | Unset):
    """

    name: str
    kind: str
    options: SourceSpecOptions | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        kind = self.kind

        options: dict[str, Any] | Unset = UNSET
        if not isinstance(self.options, Unset):
            options = self.options.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "kind": kind,
            }
        )
        if options is not UNSET:
            field_dict["options"] = options

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.source_spec_options import SourceSpecOptions  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        kind = d.pop("kind")

        _options = d.pop("options", UNSET)
        options: SourceSpecOptions | Unset
        if isinstance(_options, Unset):
            options = UNSET
        else:
            options = SourceSpecOptions.from_dict(_options)

        source_spec = cls(
            name=name,
            kind=kind,
            options=options,
        )

        return source_spec
