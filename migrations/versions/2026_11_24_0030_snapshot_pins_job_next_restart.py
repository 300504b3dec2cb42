"""snapshot_pins (the snapshots an active operation needs, owned by snapshots) and
jobs.next_restart_at (mirrored from the current run by runs/, as the job's state is)

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 00:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "snapshot_pins",
        sa.Column(
            "snapshot_id",
            sa.BigInteger(),
            sa.ForeignKey("snapshots.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "operation_id",
            sa.BigInteger(),
            sa.ForeignKey("operations.id", ondelete="CASCADE"),
            primary_key=True,
        ),
    )
    op.create_index("ix_snapshot_pins_operation_id", "snapshot_pins", ["operation_id"])
    # Operations in flight during the upgrade keep their snapshots: what they name (a submit's
    # snapshot, an update's own snapshot). A resume point's entries are not backfilled: such
    # a submit whose snapshot is deleted meanwhile fails clearly when the worker re-checks it.
    op.execute(
        """
        insert into snapshot_pins (snapshot_id, operation_id)
        select s.id, o.id from operations o
        join jobs j on j.id = o.job_id
        join jobs sj on sj.name = coalesce(o.params ->> 'snapshot_job', j.name)
        join snapshots s on s.job_id = sj.id and s.name = o.params ->> 'snapshot'
        where o.state in ('pending', 'running') and o.kind = 'submit'
        union
        select s.id, s.operation_id from snapshots s
        join operations o on o.id = s.operation_id
        where o.state in ('pending', 'running')
        on conflict do nothing
        """
    )
    op.add_column("jobs", sa.Column("next_restart_at", sa.DateTime(timezone=True)))
    op.execute(
        """
        update jobs set next_restart_at = r.next_restart_at
        from runs r where r.id = jobs.current_run_id
        """
    )


def downgrade() -> None:
    op.drop_column("jobs", "next_restart_at")
    op.drop_index("ix_snapshot_pins_operation_id", table_name="snapshot_pins")
    op.drop_table("snapshot_pins")
