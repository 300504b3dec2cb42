"""runs.standby_operation_id / standby_ready_at / go_at: a pre-warmed run (state ``standby``)
whose driver starts while the run it replaces still processes, and waits for go; jobs.prewarm:
whether its updates are pre-warmed unless the request says otherwise

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-24 16:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("standby_operation_id", sa.BigInteger(), nullable=True))
    op.add_column("runs", sa.Column("standby_ready_at", sa.DateTime(timezone=True)))
    op.add_column("runs", sa.Column("go_at", sa.DateTime(timezone=True)))
    op.add_column(
        "jobs",
        sa.Column("prewarm", sa.Boolean(), nullable=False, server_default=sa.text("true")),
    )


def downgrade() -> None:
    op.drop_column("jobs", "prewarm")
    op.drop_column("runs", "go_at")
    op.drop_column("runs", "standby_ready_at")
    op.drop_column("runs", "standby_operation_id")
