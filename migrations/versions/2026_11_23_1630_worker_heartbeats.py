"""worker_heartbeats: one row per worker process, for /metrics (live workers, heartbeat age,
lease renewals).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 16:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "worker_heartbeats",
        sa.Column("worker_id", sa.String(128), primary_key=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("every_seconds", sa.Float(), nullable=False),
        sa.Column("lease_renewals", sa.BigInteger(), nullable=False),
        sa.Column("stopped_at", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("worker_heartbeats")
