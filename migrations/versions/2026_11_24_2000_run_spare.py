"""runs.spare_*: a *spare* — the run's next attempt, its driver started ahead and waiting
(state of the run unchanged) — and jobs.hot_spare: keep one warm for the current run so a
crashed driver's restart pays no start-up

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-24 20:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("spare_seq", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("runs", sa.Column("spare_attempt", sa.Integer()))
    op.add_column("runs", sa.Column("spare_backend_id", sa.String(128)))
    op.add_column("runs", sa.Column("spare_ready_at", sa.DateTime(timezone=True)))
    op.add_column("runs", sa.Column("spare_retry_at", sa.DateTime(timezone=True)))
    op.add_column("runs", sa.Column("spare_error", sa.Text()))
    op.add_column(
        "runs",
        sa.Column("spare_requested", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column("runs", sa.Column("attempt_spare_seq", sa.Integer()))
    op.create_index(
        "ix_runs_spare", "runs", ["id"], postgresql_where=sa.text("spare_attempt is not null")
    )
    op.add_column(
        "jobs",
        sa.Column("hot_spare", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    op.drop_column("jobs", "hot_spare")
    op.drop_index("ix_runs_spare", table_name="runs")
    for column in (
        "attempt_spare_seq",
        "spare_requested",
        "spare_error",
        "spare_retry_at",
        "spare_ready_at",
        "spare_backend_id",
        "spare_attempt",
        "spare_seq",
    ):
        op.drop_column("runs", column)
