from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.drain_report_end_offsets import DrainReportEndOffsets


T = TypeVar("T", bound="DrainReport")


@_attrs_define
class DrainReport:
    """
    Attributes:
        end_offsets (DrainReportEndOffsets): Per source, the offsets the drain processes up to, in the source's own
            format (eventlog: {"0": 120, "1": 95}; file: {"logOffset": 7}). Sources fixed in an earlier report keep their
            first value.
        drained (bool | Unset):  Default: False.
    """

    end_offsets: DrainReportEndOffsets
    drained: bool | Unset = False

    def to_dict(self) -> dict[str, Any]:
        end_offsets = self.end_offsets.to_dict()

        drained = self.drained

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "end_offsets": end_offsets,
            }
        )
        if drained is not UNSET:
            field_dict["drained"] = drained

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.drain_report_end_offsets import DrainReportEndOffsets  # noqa: PLC0415

        d = dict(src_dict)
        end_offsets = DrainReportEndOffsets.from_dict(d.pop("end_offsets"))

        drained = d.pop("drained", UNSET)

        drain_report = cls(
            end_offsets=end_offsets,
            drained=drained,
        )

        return drain_report
