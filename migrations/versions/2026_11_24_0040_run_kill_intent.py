"""runs.kill_attempt / kill_requested_at: an operation's request that the reconciler kill the
driver of a stopping run (the operation states it; only the reconciler calls the backend)

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24 00:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("kill_attempt", sa.Integer(), nullable=True))
    op.add_column("runs", sa.Column("kill_requested_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    op.drop_column("runs", "kill_requested_at")
    op.drop_column("runs", "kill_attempt")
