from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.submit_body_resume_point_type_0 import SubmitBodyResumePointType0


T = TypeVar("T", bound="SubmitBody")


@_attrs_define
class SubmitBody:
    """
    Attributes:
        version (int): The version number to run.
        snapshot (None | str | Unset): Start from this snapshot: queries resume their state by name.
        snapshot_job (None | str | Unset): The job the snapshot belongs to; default this job.
        resume_point (None | SubmitBodyResumePointType0 | Unset):
        dry_run (bool | Unset): With a snapshot or resume point, before the run starts, run the new version's app
            against a scratch copy of the state it would resume (noop sinks, one empty batch): Spark checks the state
            schemas and stateful operators as a real restart would, which catches app changes the declarations do not show
            (an avg for a sum, a session window for a tumbling one, another grouping key). Only when a resumed query holds
            state. false: skip it (the declared checks still apply). Default: True.
        dry_run_timeout_seconds (int | None | Unset): How long the dry run may take, driver start included (default
            300); past it the request is refused and nothing was touched.
    """

    version: int
    snapshot: None | str | Unset = UNSET
    snapshot_job: None | str | Unset = UNSET
    resume_point: None | SubmitBodyResumePointType0 | Unset = UNSET
    dry_run: bool | Unset = True
    dry_run_timeout_seconds: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.submit_body_resume_point_type_0 import SubmitBodyResumePointType0  # noqa: PLC0415

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
        elif isinstance(self.resume_point, SubmitBodyResumePointType0):
            resume_point = self.resume_point.to_dict()
        else:
            resume_point = self.resume_point

        dry_run = self.dry_run

        dry_run_timeout_seconds: int | None | Unset
        if isinstance(self.dry_run_timeout_seconds, Unset):
            dry_run_timeout_seconds = UNSET
        else:
            dry_run_timeout_seconds = self.dry_run_timeout_seconds

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
        if dry_run is not UNSET:
            field_dict["dry_run"] = dry_run
        if dry_run_timeout_seconds is not UNSET:
            field_dict["dry_run_timeout_seconds"] = dry_run_timeout_seconds

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.submit_body_resume_point_type_0 import SubmitBodyResumePointType0  # noqa: PLC0415

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

        def _parse_resume_point(data: object) -> None | SubmitBodyResumePointType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                resume_point_type_0 = SubmitBodyResumePointType0.from_dict(data)

                return resume_point_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubmitBodyResumePointType0 | Unset, data)

        resume_point = _parse_resume_point(d.pop("resume_point", UNSET))

        dry_run = d.pop("dry_run", UNSET)

        def _parse_dry_run_timeout_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        dry_run_timeout_seconds = _parse_dry_run_timeout_seconds(d.pop("dry_run_timeout_seconds", UNSET))

        submit_body = cls(
            version=version,
            snapshot=snapshot,
            snapshot_job=snapshot_job,
            resume_point=resume_point,
            dry_run=dry_run,
            dry_run_timeout_seconds=dry_run_timeout_seconds,
        )

        return submit_body
