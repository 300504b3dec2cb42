"""startpoints

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 04:23:12.406561
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "startpoints",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("source", sa.String(length=128), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=True),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_startpoints_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_startpoints")),
    )
    op.create_index(
        "uq_startpoints_job_source_partition",
        "startpoints",
        ["job_id", "source", sa.literal_column("coalesce(partition, -1)")],
        unique=True,
    )
    op.create_table(
        "startpoint_applications",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("run_id", sa.BigInteger(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("query", sa.String(length=128), nullable=False),
        sa.Column("source", sa.String(length=128), nullable=False),
        sa.Column("startpoints", postgresql.JSONB(), nullable=False),
        sa.Column("checkpoint", sa.String(length=4096), nullable=True),
        sa.Column("batch_id", sa.BigInteger(), nullable=True),
        sa.Column("before_offsets", postgresql.JSONB(), nullable=False),
        sa.Column("after_offsets", postgresql.JSONB(), nullable=False),
        sa.Column("original_file", sa.String(length=4096), nullable=True),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("committed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("reverted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("reverted_by", sa.String(length=128), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["jobs.id"],
            name=op.f("fk_startpoint_applications_job_id_jobs"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["runs.id"],
            name=op.f("fk_startpoint_applications_run_id_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_startpoint_applications")),
    )
    op.create_index(
        "ix_startpoint_applications_job_id_id",
        "startpoint_applications",
        ["job_id", "id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_startpoint_applications_job_id_id", table_name="startpoint_applications")
    op.drop_table("startpoint_applications")
    op.drop_index("uq_startpoints_job_source_partition", table_name="startpoints")
    op.drop_table("startpoints")
