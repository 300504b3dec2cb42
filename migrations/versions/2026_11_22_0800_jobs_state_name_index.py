"""jobs (state, name): a page of jobs in one state is a range scan, not a sort

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22 08:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_jobs_state_name", "jobs", ["state", "name"])
    op.drop_index("ix_jobs_state", table_name="jobs")


def downgrade() -> None:
    op.create_index("ix_jobs_state", "jobs", ["state"])
    op.drop_index("ix_jobs_state_name", table_name="jobs")
