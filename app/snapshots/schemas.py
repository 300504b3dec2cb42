"""Snapshots as callers see them: hz-cli's list (TIME, SIZE, JOB, SNAPSHOT) and the detail."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, Field, model_validator

from app.core.durations import parse_duration
from app.core.schemas import Body, Name, Response
from app.snapshots.models import SnapshotState


def _no_dot_dot(name: str) -> str:
    if ".." in name:
        raise ValueError("must not contain '..'")
    return name


# A snapshot name ends up in a store path: no separators (Name), no '..'.
SnapshotName = Annotated[Name, AfterValidator(_no_dot_dot)]


class SnapshotSummary(Response):
    job: str
    name: str
    state: SnapshotState = Field(description="Only a ready snapshot can be started from.")
    created_at: datetime = Field(description="When the export was requested (hz-cli's TIME).")
    completed_at: datetime | None
    size_bytes: int = Field(description="Bytes of checkpoint files the snapshot holds.")
    bytes_written: int = Field(
        description="Bytes this export wrote; the rest was already stored by earlier snapshots."
    )
    file_count: int
    run_id: int | None = Field(description="The run it was exported from.")
    version: int | None = Field(description="The version that run ran.")
    stop: bool = Field(description="Exported with stop: the run ended at the snapshot.")


class OperatorInfo(Response):
    id: int
    name: str | None = Field(description="Spark's operator name, e.g. stateStoreSave.")
    partitions: int
    stores: list[str]
    key_schema: dict[str, Any] | None
    value_schema: dict[str, Any] | None


class QuerySnapshot(Response):
    query: str
    batch_id: int | None = Field(description="The committed batch; null: nothing committed.")
    offsets: dict[str, Any] = Field(description="Source name -> offsets of that batch.")
    watermark_ms: int | None
    next_watermark_ms: int | None
    operators: list[OperatorInfo]
    declared_operators: list[dict[str, Any]]
    files: int
    size_bytes: int


class SnapshotUseResponse(Response):
    run_id: int
    job: str
    run_state: str
    query: str
    source_query: str
    parts: str
    at: datetime


class SnapshotResponse(SnapshotSummary):
    queries: list[QuerySnapshot]
    started_runs: list[SnapshotUseResponse] = Field(description="Runs started from it.")
    operation_id: int | None
    error: str | None
    manifest: str | None = Field(description="Where its manifest is in the snapshot store.")


class Coordinates(Response):
    """Onyx's snapshot coordinates, for Spark: one committed batch of one query's checkpoint."""

    job: str
    run: int
    query: str
    batch_id: int


class CoordinatesResponse(Response):
    job: str
    run: int
    version: int
    run_state: str
    coordinates: list[Coordinates]
    uncommitted: list[str] = Field(description="Queries with no committed batch yet.")


class RetentionBody(Body):
    keep_last: int | None = Field(
        None, ge=1, le=100_000, description="Keep this many newest snapshots; null: no limit."
    )
    max_age: str | None = Field(
        None,
        max_length=32,
        examples=["7d", "12h"],
        description="Delete snapshots older than this; null: no limit.",
    )

    @model_validator(mode="after")
    def _age(self) -> RetentionBody:
        if self.max_age is not None:
            parse_duration(self.max_age)
        return self


class RetentionResponse(Response):
    job: str
    keep_last: int | None
    max_age_seconds: int | None
    note: str = (
        "Applied after each export; a snapshot a run in an active state started from is "
        "never deleted."
    )
