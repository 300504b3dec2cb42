from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from app.core.schemas import Body, Name, Response, redacting
from app.operations.models import OperationState
from app.resume_points.schemas import ResumePoint
from app.snapshots.schemas import SnapshotName

OperationKind = Literal["submit", "stop", "cancel", "restart", "drain", "snapshot", "update"]

# The compatibility dry run, as submit and update both offer it.
DRY_RUN = (
    "run the new version's app against a scratch copy of the state it would resume (noop "
    "sinks, one empty batch): Spark checks the state schemas and stateful operators as a real"
    " restart would, which catches app changes the declarations do not show (an avg for a "
    "sum, a session window for a tumbling one, another grouping key). Only when a resumed "
    "query holds state. false: skip it (the declared checks still apply)."
)
DryRunTimeout = Annotated[
    int | None,
    Field(
        ge=30,
        le=3_600,
        description="How long the dry run may take, driver start included (default 300); "
        "past it the request is refused and nothing was touched.",
    ),
]


class SubmitBody(Body):
    version: int = Field(ge=1, le=2_147_483_647, description="The version number to run.")
    snapshot: SnapshotName | None = Field(
        None, description="Start from this snapshot: queries resume their state by name."
    )
    snapshot_job: Name | None = Field(
        None, description="The job the snapshot belongs to; default this job."
    )
    resume_point: ResumePoint | None = None
    dry_run: bool = Field(
        True, description="With a snapshot or resume point, before the run starts, " + DRY_RUN
    )
    dry_run_timeout_seconds: DryRunTimeout = None

    @model_validator(mode="after")
    def _one_start(self) -> SubmitBody:
        if self.snapshot is not None and self.resume_point is not None:
            raise ValueError("give 'snapshot' or 'resume_point', not both")
        if self.snapshot_job is not None and self.snapshot is None:
            raise ValueError("'snapshot_job' goes with 'snapshot'")
        return self


class StopBody(Body):
    timeout_seconds: int = Field(
        120,
        ge=1,
        le=86_400,
        description="How long to wait for a graceful stop before killing the driver.",
    )


class RestartBody(Body):
    prewarm: bool | None = Field(
        None,
        description="Default: the job's prewarm (true unless set otherwise). While the run "
        "runs, its next attempt's driver starts first as a spare (session built, Python "
        "started, waiting before its queries); the run then stops at a batch boundary and the "
        "spare takes over at once from the same checkpoint, so the output stands still for "
        "the stop and the first batch only. It needs room for one more driver on the cluster "
        "(a queued spare waits there; the run processes on). false: stop, then start again.",
    )


class Step(Response):
    name: str
    at: datetime
    detail: dict[str, Any] | None = None


class OperationResponse(Response):
    id: int
    job: str
    kind: OperationKind
    state: OperationState
    params: dict[str, Any]
    run_id: int | None
    steps: list[Step] = Field(description="Steps done so far, in order.")
    error: str | None
    result: dict[str, Any] | None = Field(
        description="Once finished, the outcome. While running, how far it got: a drain's "
        "backlog per query; a snapshot export's bytes_total, bytes_copied, files_total and "
        "files_copied (updated as it copies, about twice a second)."
    )
    idempotency_key: str | None
    created_by: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    _redact = redacting("error")


class DrainBody(Body):
    timeout_seconds: int = Field(
        1800,
        ge=10,
        le=7 * 86_400,
        description="A drain still running after this fails, and the job is stopped cleanly "
        "at a batch boundary (nothing lost; it resumes from its checkpoint).",
    )


class SnapshotBody(Body):
    name: SnapshotName = Field(description="Unique within the job.", examples=["before-v2"])
    stop: bool = Field(
        False,
        description="Stop every query at a batch boundary first and end the run (hz-cli "
        "save-snapshot); false exports the committed state while the job keeps running.",
    )
    timeout_seconds: int = Field(
        120, ge=1, le=86_400, description="With stop: how long to wait for a graceful stop."
    )


class UpdateBody(Body):
    version: int = Field(ge=1, le=2_147_483_647, description="The version to run next.")
    strategy: Literal["snapshot", "drain", "stateless"] = Field(
        "snapshot",
        description="snapshot: save a snapshot (stop), start the new version from it, roll "
        "back to the old version from the same snapshot if the new one fails to start. "
        "drain: for an incompatible change (state or intermediate schema): drain the old run "
        "(all input up to fixed end offsets, every window flushed), then start the new version "
        "on fresh checkpoints exactly at the drained offsets; nothing lost, nothing twice. "
        "stateless: for a running version without state: stop it at a batch boundary, start "
        "the new version on fresh checkpoints exactly where it stopped (refused with 422 when "
        "the running version declares stateful operators).",
    )
    snapshot_name: SnapshotName | None = Field(
        None,
        description="Name of the snapshot the update saves; default update-v<old>-v<new>-<time>.",
    )
    dry_run: bool = Field(
        True,
        description="strategy snapshot: before the old run is stopped, "
        + DRY_RUN
        + " Strategies drain and stateless: before the old run drains or stops, the new "
        "version runs one trial batch over the last 200 records per partition the old run "
        "committed (scratch checkpoints, noop sinks; pre-warmed, in its standby), so a version "
        "whose code fails on real records is refused; false: skip it.",
    )
    dry_run_timeout_seconds: DryRunTimeout = None
    timeout_seconds: int | None = Field(
        None,
        ge=1,
        le=7 * 86_400,
        description="snapshot, stateless: how long to wait for the old run's graceful stop "
        "(default 120). "
        "drain: how long the drain may take (default 1800); a drain still running then is "
        "stopped at a batch boundary and the old version started again from its checkpoint.",
    )
    prewarm: bool | None = Field(
        None,
        description="Default: the job's prewarm (true unless set otherwise). Start the new "
        "version's driver while the old run still processes: it "
        "builds its session and starts Python, then waits as a standby (run state standby) "
        "until the old run has ended and its checkpoints are in place, and starts its queries "
        "the moment it is told to go. The output then stands still for the stop and the first "
        "batch only, not for a driver's start. It needs room for one more driver on the "
        "cluster (a queued standby waits there, the old run processing on). false: the cold "
        "path, one driver at a time.",
    )
    verify_seconds: int = Field(
        20,
        ge=0,
        le=3_600,
        description="After the new run starts, how long it must keep running before the update "
        "counts as done; besides, every query must commit its first batch past the one it was "
        "restored at (a fresh query: batch 0), or report itself idle when it has no new input, "
        "within first_batch_seconds. A failure or neither in time rolls back. 0: only check "
        "that it started.",
    )
    first_batch_seconds: int | None = Field(
        None,
        ge=1,
        le=86_400,
        description="How long every query of the new run has to commit its first batch past the "
        "restored one, or (with no new input) report Spark's idle event (default 600); a query "
        "that does neither in time rolls the update back.",
    )
