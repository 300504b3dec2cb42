from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.compatibility_body_resume_point_type_0 import CompatibilityBodyResumePointType0


T = TypeVar("T", bound="CompatibilityBody")


@_attrs_define
class CompatibilityBody:
    """
    Attributes:
        version (int): The version to check.
        snapshot (None | str | Unset): Start from this snapshot by name.
        snapshot_job (None | str | Unset): The snapshot's job; default this job.
        resume_point (CompatibilityBodyResumePointType0 | None | Unset):
    """

    version: int
    snapshot: None | str | Unset = UNSET
    snapshot_job: None | str | Unset = UNSET
    resume_point: CompatibilityBodyResumePointType0 | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.compatibility_body_resume_point_type_0 import CompatibilityBodyResumePointType0  # noqa: PLC0415

        version = self.version

        snapshot: None | str | Unset
        if isinstance(self.snapshot, Unset):
            snapshot = UNSET
        else:
            snapshot = self.snapshot

        snapshot_job: None | str | Unset
        if isinstance(self.snapshot_job, Unset):
            snapshot_job = UNSET
        else:
            snapshot_job = self.snapshot_job

        resume_point: dict[str, Any] | None | Unset
        if isinstance(self.resume_point, Unset):
            resume_point = UNSET
        elif isinstance(self.resume_point, CompatibilityBodyResumePointType0):
            resume_point = self.resume_point.to_dict()
        else:
            resume_point = self.resume_point

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "version": version,
            }
        )
        if snapshot is not UNSET:
            field_dict["snapshot"] = snapshot
        if snapshot_job is not UNSET:
            field_dict["snapshot_job"] = snapshot_job
        if resume_point is not UNSET:
            field_dict["resume_point"] = resume_point

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.compatibility_body_resume_point_type_0 import CompatibilityBodyResumePointType0  # noqa: PLC0415

        d = dict(src_dict)
        version = d.pop("version")

        def _parse_snapshot(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        snapshot = _parse_snapshot(d.pop("snapshot", UNSET))

        def _parse_snapshot_job(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        snapshot_job = _parse_snapshot_job(d.pop("snapshot_job", UNSET))

        def _parse_resume_point(data: object) -> CompatibilityBodyResumePointType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                resume_point_type_0 = CompatibilityBodyResumePointType0.from_dict(data)

                return resume_point_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CompatibilityBodyResumePointType0 | None | Unset, data)

        resume_point = _parse_resume_point(d.pop("resume_point", UNSET))

        compatibility_body = cls(
            version=version,
            snapshot=snapshot,
            snapshot_job=snapshot_job,
            resume_point=resume_point,
        )

        return compatibility_body
