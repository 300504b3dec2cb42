from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from sqlalchemy import BigInteger, Boolean, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.core.db import Base, UTCDateTime, utcnow
from app.core.types import JSONType
from app.jobs.models import Job

# The one definition of a snapshot's states (the API's schema reads it from here).
SnapshotState = Literal["creating", "ready", "failed"]
CREATING, READY, FAILED = get_args(SnapshotState)


class Snapshot(Base):
    """A named export of a run's state (the files live in the snapshot store; this is the
    catalog). Usable only once ``ready``: its manifest is then complete."""

    __tablename__ = "snapshots"
    __table_args__ = (UniqueConstraint("job_id", "name"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(128))
    state: Mapped[str] = mapped_column(String(16), default=CREATING)
    # hz-cli save-snapshot (export, then the run ends) rather than export-snapshot.
    stop: Mapped[bool] = mapped_column(Boolean, default=False)
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    version_number: Mapped[int | None] = mapped_column(Integer)
    operation_id: Mapped[int | None] = mapped_column(
        ForeignKey("operations.id", ondelete="SET NULL"), index=True
    )
    # Per query: batch id, source offsets, watermark, pinned conf, operators and schemas.
    queries: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    # Bytes the snapshot references (its size) and bytes this export actually wrote.
    size_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    bytes_written: Mapped[int] = mapped_column(BigInteger, default=0)
    file_count: Mapped[int] = mapped_column(Integer, default=0)
    manifest: Mapped[str | None] = mapped_column(String(4096))
    error: Mapped[str | None] = mapped_column(Text)
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    job: Mapped[Job] = relationship()

    @property
    def held_queries(self) -> dict[str, dict[str, Any]]:
        """The queries it holds a committed batch of, by name (one that had committed none
        holds nothing to resume)."""
        return {
            q: info for q, info in (self.queries or {}).items() if info.get("batch_id") is not None
        }


class SnapshotPin(Base):
    """An active operation that will start from (or is saving) this snapshot: it may not be
    deleted or expired until the operation ends. Written where the operation is created
    (operations/lifecycle.py), released where it ends (operations/state.py)."""

    __tablename__ = "snapshot_pins"

    snapshot_id: Mapped[int] = mapped_column(
        ForeignKey("snapshots.id", ondelete="CASCADE"), primary_key=True
    )
    operation_id: Mapped[int] = mapped_column(
        ForeignKey("operations.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class SnapshotUse(Base):
    """A run that started (some queries) from a snapshot: protects the snapshot while that
    run is active, and answers "which runs started from it"."""

    __tablename__ = "snapshot_uses"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    snapshot_id: Mapped[int] = mapped_column(
        ForeignKey("snapshots.id", ondelete="CASCADE"), index=True
    )
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    query: Mapped[str] = mapped_column(String(128))
    source_query: Mapped[str] = mapped_column(String(128))
    # "offsets+state", or "offsets" for a stateless query.
    parts: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SnapshotRetention(Base):
    """Per job: keep the last N snapshots and/or those younger than T (never one in use)."""

    __tablename__ = "snapshot_retention"

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    keep_last: Mapped[int | None] = mapped_column(Integer)
    max_age_seconds: Mapped[int | None] = mapped_column(BigInteger)
    updated_by: Mapped[str] = mapped_column(String(128))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
