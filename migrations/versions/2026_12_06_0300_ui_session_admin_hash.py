"""ui_sessions.admin_token_hash: a session opened with the bootstrap admin token names the
token's hash, so rotating TIDEGATE_ADMIN_TOKEN ends it (issue 51 L5)

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-06 03:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("ui_sessions", sa.Column("admin_token_hash", sa.String(64), nullable=True))
    # Sessions of the admin token opened before this column: no hash to check, so they end.
    op.execute(
        "UPDATE ui_sessions SET revoked_at = now() WHERE token_id IS NULL AND revoked_at IS NULL"
    )


def downgrade() -> None:
    op.drop_column("ui_sessions", "admin_token_hash")
