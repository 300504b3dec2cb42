from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Index, SmallInteger, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.core.db import Base, UTCDateTime, utcnow
from app.core.types import JSONType


class AuditEvent(Base):
    """Who did what to which job, when, with what result. The job is kept by name so the
    trail outlives a deleted job."""

    __tablename__ = "audit_events"
    __table_args__ = (Index("ix_audit_events_job_id", "job", "id"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    actor: Mapped[str] = mapped_column(String(128))
    # The stored token that acted (None: the bootstrap admin token, or the system); its name
    # above is free text and may be reused.
    actor_token_id: Mapped[int | None] = mapped_column(BigInteger)
    action: Mapped[str] = mapped_column(String(64), index=True)
    job: Mapped[str | None] = mapped_column(String(128))
    target: Mapped[str | None] = mapped_column(Text)
    result: Mapped[str] = mapped_column(String(16))
    status_code: Mapped[int] = mapped_column(SmallInteger)
    detail: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    request_id: Mapped[str | None] = mapped_column(String(64))
