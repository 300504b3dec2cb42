from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ResumeFrom")


@_attrs_define
class ResumeFrom:
    """Resume from a named snapshot (of this job, or of ``job``), or from the coordinates of
    an earlier run's checkpoint (``run`` and, optionally, ``batch_id``).

        Attributes:
            mode (Literal['resume']):
            query (str): The query in the snapshot or run to take from.
            snapshot (None | str | Unset): A snapshot's name.
            job (None | str | Unset): The snapshot's or run's job; default this job.
            run (int | None | Unset): A run id (coordinates).
            batch_id (int | None | Unset): With run: the committed batch; default the latest.
    """

    mode: Literal["resume"]
    query: str
    snapshot: None | str | Unset = UNSET
    job: None | str | Unset = UNSET
    run: int | None | Unset = UNSET
    batch_id: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        mode = self.mode

        query = self.query

        snapshot: None | str | Unset
        if isinstance(self.snapshot, Unset):
            snapshot = UNSET
        else:
            snapshot = self.snapshot

        job: None | str | Unset
        if isinstance(self.job, Unset):
            job = UNSET
        else:
            job = self.job

        run: int | None | Unset
        if isinstance(self.run, Unset):
            run = UNSET
        else:
            run = self.run

        batch_id: int | None | Unset
        if isinstance(self.batch_id, Unset):
            batch_id = UNSET
        else:
            batch_id = self.batch_id

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "mode": mode,
                "query": query,
            }
        )
        if snapshot is not UNSET:
            field_dict["snapshot"] = snapshot
        if job is not UNSET:
            field_dict["job"] = job
        if run is not UNSET:
            field_dict["run"] = run
        if batch_id is not UNSET:
            field_dict["batch_id"] = batch_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        mode = cast(Literal["resume"], d.pop("mode"))
        if mode != "resume":
            raise ValueError(f"mode must match const 'resume', got '{mode}'")

        query = d.pop("query")

        def _parse_snapshot(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        snapshot = _parse_snapshot(d.pop("snapshot", UNSET))

        def _parse_job(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        job = _parse_job(d.pop("job", UNSET))

        def _parse_run(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        run = _parse_run(d.pop("run", UNSET))

        def _parse_batch_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        batch_id = _parse_batch_id(d.pop("batch_id", UNSET))

        resume_from = cls(
            mode=mode,
            query=query,
            snapshot=snapshot,
            job=job,
            run=run,
            batch_id=batch_id,
        )

        return resume_from
