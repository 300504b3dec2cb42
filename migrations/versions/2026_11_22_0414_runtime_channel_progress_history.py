"""runtime channel: progress history

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 04:14:35.150187
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "query_progress",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("run_id", sa.BigInteger(), nullable=False),
        sa.Column("query", sa.String(length=128), nullable=False),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("payload", postgresql.JSONB(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_query_progress_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_query_progress")),
    )
    op.create_index(
        "ix_query_progress_run_id_query_id",
        "query_progress",
        ["run_id", "query", "id"],
        unique=False,
    )
    op.add_column("runs", sa.Column("runtime_seen_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "runtime_seen_at")
    op.drop_index("ix_query_progress_run_id_query_id", table_name="query_progress")
    op.drop_table("query_progress")
