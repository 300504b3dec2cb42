"""runs.fenced_backend_id / fenced_at: the application of an attempt that said it is fenced
(its queries and Spark session stopped), watched until it exits and killed if it lingers

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 07:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("fenced_backend_id", sa.String(128), nullable=True))
    op.add_column("runs", sa.Column("fenced_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    op.drop_column("runs", "fenced_at")
    op.drop_column("runs", "fenced_backend_id")
