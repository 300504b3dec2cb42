from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
    select,
    text,
)
from sqlalchemy.orm import Mapped, column_property, mapped_column, relationship

from app.clusters.models import Cluster
from app.core.db import Base, UTCDateTime, utcnow
from app.core.types import JSONType


class Job(Base):
    """A named streaming job. Its code lives in immutable versions; its life in runs."""

    __tablename__ = "jobs"
    # A page of jobs in one state is a range scan in name order (keyset pagination).
    __table_args__ = (Index("ix_jobs_state_name", "state", "name"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    description: Mapped[str | None] = mapped_column(Text)
    restart_policy: Mapped[dict[str, Any]] = mapped_column(JSONType)
    # Its updates start the new driver as a standby first (app/worker/standby/standby.py) unless the
    # request says prewarm: false.
    prewarm: Mapped[bool] = mapped_column(Boolean, default=True, server_default=text("true"))
    # A spare driver is kept waiting for the current run's next attempt (app/runs/spares.py),
    # so a crashed driver's restart pays no start-up. It costs one idle driver.
    hot_spare: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    # Denormalised from the current run so lists can filter by it cheaply.
    state: Mapped[str] = mapped_column(String(16), default="idle")
    # The run the job's state follows (no FK: runs reference jobs, and a run row only goes
    # away with its job).
    current_run_id: Mapped[int | None] = mapped_column(BigInteger)
    # Mirrored from the current run with its state (app/runs/service.py) for the job's response.
    next_restart_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Optimistic locking: PATCH with If-Match compares this, concurrent writers get 409.
    revision: Mapped[int] = mapped_column(Integer, nullable=False)
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    versions: Mapped[list[JobVersion]] = relationship(
        back_populates="job",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="JobVersion.number",
    )

    __mapper_args__ = {"version_id_col": revision}

    @property
    def etag(self) -> str:
        return etag_of(self.revision)


class JobVersion(Base):
    """An immutable version of a job: the app to run, its Spark conf, its target and queries."""

    __tablename__ = "job_versions"
    __table_args__ = (UniqueConstraint("job_id", "number"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    cluster_id: Mapped[int] = mapped_column(
        ForeignKey("clusters.id", ondelete="RESTRICT"), index=True
    )
    app: Mapped[dict[str, Any]] = mapped_column(JSONType)
    conf: Mapped[dict[str, str]] = mapped_column(JSONType)
    queries: Mapped[list[dict[str, Any]]] = mapped_column(JSONType)
    description: Mapped[str | None] = mapped_column(Text)
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    job: Mapped[Job] = relationship(back_populates="versions")
    cluster: Mapped[Cluster] = relationship(lazy="joined")


# The job's newest version number, read with the job where a response needs it (a job's page
# or a job: one statement, not two); deferred, so a locked read never carries the aggregate.
Job.latest_version_number = column_property(  # type: ignore[attr-defined]
    select(func.max(JobVersion.number))
    .where(JobVersion.job_id == Job.id)
    .correlate_except(JobVersion)
    .scalar_subquery(),
    deferred=True,
)


def etag_of(revision: int) -> str:
    """A job's ETag: its revision, quoted; send it back as If-Match."""
    return f'"{revision}"'
