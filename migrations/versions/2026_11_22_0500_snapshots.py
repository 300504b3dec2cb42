"""snapshots

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 04:35:43.563237
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "snapshot_retention",
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("keep_last", sa.Integer(), nullable=True),
        sa.Column("max_age_seconds", sa.BigInteger(), nullable=True),
        sa.Column("updated_by", sa.String(length=128), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["jobs.id"],
            name=op.f("fk_snapshot_retention_job_id_jobs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("job_id", name=op.f("pk_snapshot_retention")),
    )
    op.create_table(
        "snapshots",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("stop", sa.Boolean(), nullable=False),
        sa.Column("run_id", sa.BigInteger(), nullable=True),
        sa.Column("version_number", sa.Integer(), nullable=True),
        sa.Column("operation_id", sa.BigInteger(), nullable=True),
        sa.Column("queries", postgresql.JSONB(), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("bytes_written", sa.BigInteger(), nullable=False),
        sa.Column("file_count", sa.Integer(), nullable=False),
        sa.Column("manifest", sa.String(length=4096), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_snapshots_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["operation_id"],
            ["operations.id"],
            name=op.f("fk_snapshots_operation_id_operations"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_snapshots_run_id_runs"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_snapshots")),
        sa.UniqueConstraint("job_id", "name", name=op.f("uq_snapshots_job_id_name")),
    )
    op.create_index(op.f("ix_snapshots_operation_id"), "snapshots", ["operation_id"], unique=False)
    op.create_table(
        "snapshot_uses",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("snapshot_id", sa.BigInteger(), nullable=False),
        sa.Column("run_id", sa.BigInteger(), nullable=False),
        sa.Column("query", sa.String(length=128), nullable=False),
        sa.Column("source_query", sa.String(length=128), nullable=False),
        sa.Column("parts", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_snapshot_uses_run_id_runs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["snapshot_id"],
            ["snapshots.id"],
            name=op.f("fk_snapshot_uses_snapshot_id_snapshots"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_snapshot_uses")),
    )
    op.create_index(op.f("ix_snapshot_uses_run_id"), "snapshot_uses", ["run_id"], unique=False)
    op.create_index(
        op.f("ix_snapshot_uses_snapshot_id"), "snapshot_uses", ["snapshot_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_snapshot_uses_snapshot_id"), table_name="snapshot_uses")
    op.drop_index(op.f("ix_snapshot_uses_run_id"), table_name="snapshot_uses")
    op.drop_table("snapshot_uses")
    op.drop_index(op.f("ix_snapshots_operation_id"), table_name="snapshots")
    op.drop_table("snapshots")
    op.drop_table("snapshot_retention")
