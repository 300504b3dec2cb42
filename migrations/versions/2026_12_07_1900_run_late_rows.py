"""runs.late_rows: per query, the rows Spark's stateful operators dropped as behind the
watermark over the run's batches, and the last batch counted (each batch counted once)

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07 19:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("late_rows", postgresql.JSONB(), nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "late_rows")
