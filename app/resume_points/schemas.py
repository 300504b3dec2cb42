"""Onyx's resume points for Spark queries: per query of a new version, where its input
offsets and its state come from."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, model_validator

from app.core.schemas import Body, Name, Response
from app.snapshots.schemas import Coordinates, SnapshotName


class ResumeFrom(Body):
    """Resume from a named snapshot (of this job, or of ``job``), or from the coordinates of
    an earlier run's checkpoint (``run`` and, optionally, ``batch_id``)."""

    mode: Literal["resume"]
    query: Name = Field(description="The query in the snapshot or run to take from.")
    snapshot: SnapshotName | None = Field(None, description="A snapshot's name.")
    job: Name | None = Field(None, description="The snapshot's or run's job; default this job.")
    run: int | None = Field(None, ge=1, le=2**62, description="A run id (coordinates).")
    batch_id: int | None = Field(
        None, ge=0, description="With run: the committed batch; default the latest."
    )

    @model_validator(mode="after")
    def _one_place(self) -> ResumeFrom:
        if (self.snapshot is None) == (self.run is None):
            raise ValueError("give exactly one of 'snapshot' or 'run' (coordinates)")
        if self.batch_id is not None and self.run is None:
            raise ValueError("'batch_id' goes with 'run'; a snapshot has one batch per query")
        return self


class Initialize(Body):
    """Start as if there were nothing to resume (empty state, the source's start)."""

    mode: Literal["initialize"]


ResumeSpec = Annotated[ResumeFrom | Initialize, Field(discriminator="mode")]


class SplitEntry(Body):
    """Offsets and state given separately (Onyx's ``:input`` and ``:windows``)."""

    offsets: ResumeSpec
    state: ResumeSpec


ResumeEntry = ResumeSpec | SplitEntry
ResumePoint = Annotated[
    dict[Name, ResumeEntry],
    Field(
        max_length=100,
        description="Query of the new version -> where it resumes from. Every stateful "
        "query needs an entry; a stateless one without an entry is initialized.",
        examples=[
            {
                "windowed_counts": {"mode": "resume", "snapshot": "before-v2", "query": "counts"},
                "enrich": {"mode": "initialize"},
            }
        ],
    ),
]

# Validates a stored resume point again (operation params are plain JSON).
ResumePointModel: TypeAdapter[dict[str, ResumeEntry]] = TypeAdapter(ResumePoint)


class BuildBody(Body):
    version: int = Field(ge=1, le=2_147_483_647, description="The version to start.")
    snapshot: SnapshotName | None = Field(None, description="Map every query to this snapshot.")
    snapshot_job: Name | None = Field(None, description="The snapshot's job; default this job.")
    coordinates: list[Coordinates] | None = Field(
        None,
        max_length=100,
        description="Map to these run coordinates (GET …/snapshot-coordinates).",
    )

    @model_validator(mode="after")
    def _one(self) -> BuildBody:
        if (self.snapshot is None) == (self.coordinates is None):
            raise ValueError("give exactly one of 'snapshot' or 'coordinates'")
        if self.snapshot_job is not None and self.snapshot is None:
            raise ValueError("'snapshot_job' goes with 'snapshot'")
        return self


class CompatibilityBody(Body):
    version: int = Field(ge=1, le=2_147_483_647, description="The version to check.")
    snapshot: SnapshotName | None = Field(None, description="Start from this snapshot by name.")
    snapshot_job: Name | None = Field(None, description="The snapshot's job; default this job.")
    resume_point: ResumePoint | None = None

    @model_validator(mode="after")
    def _one(self) -> CompatibilityBody:
        if (self.snapshot is None) == (self.resume_point is None):
            raise ValueError("give exactly one of 'snapshot' or 'resume_point'")
        return self


class ProblemResponse(Response):
    query: str
    kind: str = Field(
        description="renamed, operator_kind, operator_count, key_schema, value_schema, "
        "state_partitions, state_store_provider, missing_query, unsupported, sink_log (a "
        "declared file sink's log lacks the batches its next compaction reads), sink_ahead "
        "(a declared file sink holds batches past the one the query resumes at)"
    )
    detail: str
    operator: int | None = None
    expected: Any = None
    actual: Any = None


class QueryOutcome(Response):
    query: str
    outcome: Literal["resume", "initialize", "dropped"]
    source: dict[str, Any] | None = Field(
        None, description="Where it resumes from (snapshot or run, job, query)."
    )
    parts: list[str] = Field(default_factory=list, description="offsets, state")
    detail: str | None = None


class CompatibilityResponse(Response):
    compatible: bool
    version: int
    queries: list[QueryOutcome]
    resume: list[str]
    initialize: list[str]
    dropped: list[str] = Field(description="Snapshot queries the version does not have.")
    problems: list[ProblemResponse]


class BuildResponse(CompatibilityResponse):
    resume_point: dict[str, Any] = Field(
        description="Pass as 'resume_point' to POST …/submit (edit it first if you like)."
    )
