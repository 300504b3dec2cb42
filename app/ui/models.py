"""A status page session: what a browser holds instead of the token pasted to log in."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from app.core.db import Base, UTCDateTime, utcnow


class UiSession(Base):
    """One login to /ui. The cookie carries a random secret whose SHA-256 is stored here, never
    the token itself; it ends at ``expires_at``, at logout, or when its token is revoked."""

    __tablename__ = "ui_sessions"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    principal: Mapped[str] = mapped_column(String(128))
    scope: Mapped[str] = mapped_column(String(16))
    # The stored token it logged in with (none for the bootstrap admin token).
    token_id: Mapped[int | None] = mapped_column(
        ForeignKey("api_tokens.id", ondelete="CASCADE"), index=True
    )
    # For the bootstrap admin token (no token_id): its hash, so a rotation ends the session.
    admin_token_hash: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
