from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Float, String
from sqlalchemy.orm import Mapped, mapped_column

from app.core.db import Base, UTCDateTime, utcnow


class WorkerHeartbeat(Base):
    """One row per worker process, upserted by its heartbeat thread: what /metrics reads for
    live workers, heartbeat age and lease renewals. Rows stay after a worker stops (marked
    stopped) so the renewals counter never goes down."""

    __tablename__ = "worker_heartbeats"

    worker_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Seconds between beats: a worker is live while its last beat is under 3 of them old.
    every_seconds: Mapped[float] = mapped_column(Float)
    lease_renewals: Mapped[int] = mapped_column(BigInteger, default=0)
    stopped_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
