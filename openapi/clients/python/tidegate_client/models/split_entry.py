from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.initialize import Initialize
    from ..models.resume_from import ResumeFrom


T = TypeVar("T", bound="SplitEntry")


@_attrs_define
class SplitEntry:
    """Offsets and state given separately (Onyx's ``:input`` and ``:windows``).

    Attributes:
        offsets (Initialize | ResumeFrom):
        state (Initialize | ResumeFrom):
    """

    offsets: Initialize | ResumeFrom
    state: Initialize | ResumeFrom

    def to_dict(self) -> dict[str, Any]:
        from ..models.resume_from import ResumeFrom  # noqa: PLC0415

        offsets: dict[str, Any]
        if isinstance(self.offsets, ResumeFrom):
            offsets = self.offsets.to_dict()
        else:
            offsets = self.offsets.to_dict()

        state: dict[str, Any]
        if isinstance(self.state, ResumeFrom):
            state = self.state.to_dict()
        else:
            state = self.state.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "offsets": offsets,
                "state": state,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.initialize import Initialize  # noqa: PLC0415
        from ..models.resume_from import ResumeFrom  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_offsets(data: object) -> Initialize | ResumeFrom:
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                offsets_type_0 = ResumeFrom.from_dict(data)

                return offsets_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, dict):
                raise TypeError()
            offsets_type_1 = Initialize.from_dict(data)

            return offsets_type_1

        offsets = _parse_offsets(d.pop("offsets"))

        def _parse_state(data: object) -> Initialize | ResumeFrom:
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                state_type_0 = ResumeFrom.from_dict(data)

                return state_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, dict):
                raise TypeError()
            state_type_1 = Initialize.from_dict(data)

            return state_type_1

        state = _parse_state(d.pop("state"))

        split_entry = cls(
            offsets=offsets,
            state=state,
        )

        return split_entry
