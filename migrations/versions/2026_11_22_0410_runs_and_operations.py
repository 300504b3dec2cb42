"""runs and operations

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 04:10:51.635339
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("version_id", sa.BigInteger(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("stop_reason", sa.String(length=32), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("backend_id", sa.String(length=128), nullable=True),
        sa.Column("previous_backend_id", sa.String(length=128), nullable=True),
        sa.Column("observed_state", sa.String(length=16), nullable=True),
        sa.Column("observed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("unknown_since", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("next_restart_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("running_since", sa.DateTime(timezone=True), nullable=True),
        sa.Column("progress", postgresql.JSONB(), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_runs_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["job_versions.id"],
            name=op.f("fk_runs_version_id_job_versions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
    )
    op.create_index("ix_runs_job_id_id", "runs", ["job_id", "id"], unique=False)
    op.create_index(op.f("ix_runs_next_restart_at"), "runs", ["next_restart_at"], unique=False)
    op.create_index(op.f("ix_runs_state"), "runs", ["state"], unique=False)
    op.create_table(
        "operations",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("params", postgresql.JSONB(), nullable=False),
        sa.Column("idempotency_key", sa.String(length=128), nullable=True),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.BigInteger(), nullable=True),
        sa.Column("steps", postgresql.JSONB(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("result", postgresql.JSONB(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_operations_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_operations_run_id_runs"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_operations")),
    )
    op.create_index(
        "ix_operations_claimable", "operations", ["state", "lease_expires_at"], unique=False
    )
    op.create_index("ix_operations_job_id_id", "operations", ["job_id", "id"], unique=False)
    op.create_index(
        "uq_operations_job_id_idempotency_key",
        "operations",
        ["job_id", "idempotency_key"],
        unique=True,
    )
    op.create_index(
        "uq_operations_one_active_per_job",
        "operations",
        ["job_id"],
        unique=True,
        postgresql_where=sa.text("state in ('pending', 'running') and kind <> 'cancel'"),
    )
    op.create_table(
        "run_transitions",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("run_id", sa.BigInteger(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("from_state", sa.String(length=16), nullable=True),
        sa.Column("to_state", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_transitions_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_transitions")),
    )
    op.create_index(op.f("ix_run_transitions_run_id"), "run_transitions", ["run_id"], unique=False)
    op.add_column("jobs", sa.Column("current_run_id", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    op.drop_column("jobs", "current_run_id")
    op.drop_index(op.f("ix_run_transitions_run_id"), table_name="run_transitions")
    op.drop_table("run_transitions")
    op.drop_index(
        "uq_operations_one_active_per_job",
        table_name="operations",
        postgresql_where=sa.text("state in ('pending', 'running') and kind <> 'cancel'"),
    )
    op.drop_index("uq_operations_job_id_idempotency_key", table_name="operations")
    op.drop_index("ix_operations_job_id_id", table_name="operations")
    op.drop_index("ix_operations_claimable", table_name="operations")
    op.drop_table("operations")
    op.drop_index(op.f("ix_runs_state"), table_name="runs")
    op.drop_index(op.f("ix_runs_next_restart_at"), table_name="runs")
    op.drop_index("ix_runs_job_id_id", table_name="runs")
    op.drop_table("runs")
