from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

T = TypeVar("T", bound="Initialize")


@_attrs_define
class Initialize:
    """Start as if there were nothing to resume (empty state, the source's start).

    Attributes:
        mode (Literal['initialize']):
    """

    mode: Literal["initialize"]

    def to_dict(self) -> dict[str, Any]:
        mode = self.mode

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "mode": mode,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        mode = cast(Literal["initialize"], d.pop("mode"))
        if mode != "initialize":
            raise ValueError(f"mode must match const 'initialize', got '{mode}'")

        initialize = cls(
            mode=mode,
        )

        return initialize
