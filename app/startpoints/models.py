from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, func, text
from sqlalchemy.orm import Mapped, mapped_column

from app.core.db import Base, UTCDateTime, utcnow
from app.core.types import JSONType

# The one definition of a startpoint's states: set, then applied by the runtime that used it.
StartpointState = Literal["pending", "applied"]
PENDING, APPLIED = get_args(StartpointState)


class Startpoint(Base):
    """Where a job's source (one partition, or all of them) starts reading next time its query
    starts. Lives here, apart from the checkpoint; deleted once a batch past it commits."""

    __tablename__ = "startpoints"
    __table_args__ = (
        # One startpoint per (job, source, partition); NULL partition = every partition.
        Index(
            "uq_startpoints_job_source_partition",
            "job_id",
            "source",
            func.coalesce(text("partition"), -1),
            unique=True,
        ),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    source: Mapped[str] = mapped_column(String(128))
    partition: Mapped[int | None] = mapped_column(Integer)
    type: Mapped[str] = mapped_column(String(16))
    value: Mapped[int | None] = mapped_column(BigInteger)
    # pending: waits for the next start; applied: written, waiting for a batch to commit.
    state: Mapped[str] = mapped_column(String(16), default=PENDING)
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class StartpointApplication(Base):
    """What one application moved: enough to explain it and to put the checkpoint back."""

    __tablename__ = "startpoint_applications"
    __table_args__ = (Index("ix_startpoint_applications_job_id_id", "job_id", "id"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    attempt: Mapped[int] = mapped_column(Integer)
    query: Mapped[str] = mapped_column(String(128))
    source: Mapped[str] = mapped_column(String(128))
    startpoints: Mapped[list[dict[str, Any]]] = mapped_column(JSONType)
    checkpoint: Mapped[str | None] = mapped_column(String(4096))
    batch_id: Mapped[int | None] = mapped_column(BigInteger)
    before_offsets: Mapped[Any] = mapped_column(JSONType)
    after_offsets: Mapped[Any] = mapped_column(JSONType)
    original_file: Mapped[str | None] = mapped_column(String(4096))
    applied_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    committed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    reverted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    reverted_by: Mapped[str | None] = mapped_column(String(128))
