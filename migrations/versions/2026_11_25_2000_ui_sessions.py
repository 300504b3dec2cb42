"""ui_sessions: the status page's logins as server-side records (expiry, logout, revocation
with their token) instead of the raw token in a cookie

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-25 20:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ui_sessions",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("principal", sa.String(length=128), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("token_id", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["token_id"],
            ["api_tokens.id"],
            name=op.f("fk_ui_sessions_token_id_api_tokens"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ui_sessions")),
        sa.UniqueConstraint("secret_hash", name=op.f("uq_ui_sessions_secret_hash")),
    )
    op.create_index(op.f("ix_ui_sessions_token_id"), "ui_sessions", ["token_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_ui_sessions_token_id"), table_name="ui_sessions")
    op.drop_table("ui_sessions")
