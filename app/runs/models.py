from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.core.db import Base, UTCDateTime, utcnow
from app.core.types import JSONType
from app.jobs.models import Job, JobVersion


class Run(Base):
    """One submission of a version. Restarts are new *attempts* of the same run: they reuse
    its checkpoint (``${checkpoint_root}/${job}/${run}/${query}``)."""

    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_job_id_id", "job_id", "id"),
        # The reconciler's sweep finds runs with a spare to watch among all runs ever.
        Index("ix_runs_spare", "id", postgresql_where=text("spare_attempt is not null")),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    version_id: Mapped[int] = mapped_column(ForeignKey("job_versions.id", ondelete="CASCADE"))
    state: Mapped[str] = mapped_column(String(16), index=True)
    # What ended it (stop, cancel, drain, failure, lost) — for people and for transitions.
    stop_reason: Mapped[str | None] = mapped_column(String(32))
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    # Failures since the run last stayed healthy for the policy's stable period (PSTL's n).
    failures: Mapped[int] = mapped_column(Integer, default=0)
    backend_id: Mapped[str | None] = mapped_column(String(128))
    # The previous attempt's backend id, kept until it is known to be gone (fencing).
    previous_backend_id: Mapped[str | None] = mapped_column(String(128))
    # An attempt that said it is fenced (app/runs/ending.py): its process should exit by
    # itself; kept until the backend says it has, and killed if it has not in time.
    fenced_backend_id: Mapped[str | None] = mapped_column(String(128))
    fenced_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The attempt whose submission may have reached the backend: recorded before the call, so
    # a resumed worker looks the attempt up first and never submits it twice.
    submit_intent_attempt: Mapped[int | None] = mapped_column(Integer)
    # A kill an operation asked for (runs.service.request_kill) and the reconciler carries
    # out: only for this attempt, so a request never reaches the attempt after it.
    kill_attempt: Mapped[int | None] = mapped_column(Integer)
    kill_requested_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    observed_state: Mapped[str | None] = mapped_column(String(16))
    observed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    unknown_since: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    next_restart_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    running_since: Mapped[datetime | None] = mapped_column(UTCDateTime)
    progress: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    # Per query, the runtime's restarts of it alone (tidegate_runtime/driver/restart_policy.py):
    # {query: {restarts, failures, last_error, last_failed_at, next_restart_at, gave_up}}.
    query_restarts: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    # Per query, the rows its stateful operators dropped as late (behind the watermark) over
    # the run's batches, and the last batch counted (a batch reported twice counts once):
    # {query: {"rows": int, "batch_id": int}}. Absent until a batch drops a row.
    late_rows: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    # When the in-job runtime last asked for directives: a run with a runtime is stopped
    # gracefully (at a batch boundary); one without can only be killed.
    runtime_seen_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # A drain: when requested, the end offsets fixed then ({source: {partition: offset}}),
    # and when it completed. The next version can start exactly there.
    drain: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    # A pre-warmed run (state standby): the operation it was started for, when its runtime
    # said it was ready (session built, Python started), and when it was told to go.
    standby_operation_id: Mapped[int | None] = mapped_column(BigInteger)
    standby_ready_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    go_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # A standby that runs its update's dry run before it waits ({"scratch", "check",
    # "timeout"}: app/worker/standby/ready.py); None for any other run.
    standby_dry_run: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    # A spare (app/runs/spares.py): the run's next attempt, its driver submitted ahead and
    # waiting for go, so a restart (asked for, or after a crash) pays no start-up. spare_seq
    # numbers every spare submitted (its tag, never reused); spare_attempt is the attempt it
    # is for (None: no spare); attempt_spare_seq, the spare the current attempt runs on.
    spare_seq: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    spare_attempt: Mapped[int | None] = mapped_column(Integer)
    spare_backend_id: Mapped[str | None] = mapped_column(String(128))
    spare_ready_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    spare_retry_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    spare_error: Mapped[str | None] = mapped_column(Text)
    # An operation (a pre-warmed restart) wants a spare whether or not the job keeps one.
    spare_requested: Mapped[bool] = mapped_column(Boolean, default=False, server_default="false")
    attempt_spare_seq: Mapped[int | None] = mapped_column(Integer)
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    job: Mapped[Job] = relationship(lazy="joined")
    version: Mapped[JobVersion] = relationship(lazy="joined")

    @property
    def tag(self) -> str:
        """The Spark app name / Livy batch name of the current attempt: finds it again."""
        if self.attempt_spare_seq is not None:  # the attempt runs on a spare, named ahead
            return f"tidegate-run-{self.id}-a{self.attempt}-spare{self.attempt_spare_seq}"
        return f"tidegate-run-{self.id}-a{self.attempt}"

    @property
    def spare_tag(self) -> str:
        """The app name of the spare: never one an attempt's lookup by tag could find."""
        return f"tidegate-run-{self.id}-a{self.spare_attempt}-spare{self.spare_seq}"


class RunTransition(Base):
    """Every state change of a run, for people reading what happened."""

    __tablename__ = "run_transitions"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    from_state: Mapped[str | None] = mapped_column(String(16))
    to_state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text)


class QueryProgress(Base):
    """A bounded history of each query's progress (the latest is also on the run)."""

    __tablename__ = "query_progress"
    __table_args__ = (Index("ix_query_progress_run_id_query_id", "run_id", "query", "id"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    query: Mapped[str] = mapped_column(String(128))
    batch_id: Mapped[int] = mapped_column(BigInteger)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    payload: Mapped[dict[str, Any]] = mapped_column(JSONType)
