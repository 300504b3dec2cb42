"""operations.plan: the plan the API computed and checked, stored for the worker to re-validate

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 23:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable: operations enqueued before this revision (and kinds that plan nothing) have none.
    op.add_column("operations", sa.Column("plan", postgresql.JSONB(), nullable=True))


def downgrade() -> None:
    op.drop_column("operations", "plan")
