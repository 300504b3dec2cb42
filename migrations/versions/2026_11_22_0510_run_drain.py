"""run drain: the end offsets a drain fixed, and when it completed

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22 05:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("drain", postgresql.JSONB(), nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "drain")
