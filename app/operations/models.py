from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.core.db import Base, UTCDateTime, utcnow
from app.core.types import JSONType
from app.jobs.models import Job

# The one definition of an operation's states: the API's schema, the owner of the state
# (app/operations/state.py) and the metrics read them from here.
OperationState = Literal["pending", "running", "succeeded", "failed"]
PENDING, RUNNING, SUCCEEDED, FAILED = get_args(OperationState)
ACTIVE_OPERATION_STATES = (PENDING, RUNNING)


class Operation(Base):
    """A lifecycle request (submit, stop, cancel, restart, …) the worker carries out step by
    step. Steps done are committed as they finish, so a worker killed mid-way resumes."""

    __tablename__ = "operations"
    __table_args__ = (
        Index("ix_operations_job_id_id", "job_id", "id"),
        # One active lifecycle operation per job: the database settles races (409, not two).
        Index(
            "uq_operations_one_active_per_job",
            "job_id",
            unique=True,
            postgresql_where=text("state in ('pending', 'running') and kind <> 'cancel'"),
        ),
        Index("uq_operations_job_id_idempotency_key", "job_id", "idempotency_key", unique=True),
        Index("ix_operations_claimable", "state", "lease_expires_at"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(16), default=PENDING)
    params: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    idempotency_key: Mapped[str | None] = mapped_column(String(128))
    request_hash: Mapped[str] = mapped_column(String(64))
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    steps: Mapped[list[dict[str, Any]]] = mapped_column(JSONType, default=list)
    error: Mapped[str | None] = mapped_column(Text)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    # The resume plan the API computed and checked (app/resume_points/plan.py, Plan.stored());
    # the worker re-validates it and never re-decides it. None: a kind that starts nothing.
    plan: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    job: Mapped[Job] = relationship()

    def step_done(self, name: str) -> bool:
        return any(s["name"] == name for s in self.steps)

    def step_details(self) -> dict[str, dict[str, Any]]:
        """Every recorded step's detail, by the step's name."""
        return {step["name"]: dict(step.get("detail") or {}) for step in self.steps}
