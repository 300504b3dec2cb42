"""runs.submit_intent_attempt: the attempt whose submission may have reached the backend

Recorded before the backend is called, so a resumed worker asks the backend whether the
attempt exists only when it may; an attempt never sent is submitted without a lookup (a
standalone master cannot always tell whose a queued driver is).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22 11:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("submit_intent_attempt", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "submit_intent_attempt")
