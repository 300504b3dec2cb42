"""audit_events.actor_token_id: the stored token that acted, beside its free-text name

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 16:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("audit_events", sa.Column("actor_token_id", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    op.drop_column("audit_events", "actor_token_id")
