"""runs.standby_dry_run: a standby that runs its update's dry run first, in its own driver
(the scratch root and the queries to check), so one driver start serves both

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-25 12:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("standby_dry_run", postgresql.JSONB(), nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "standby_dry_run")
