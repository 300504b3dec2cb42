"""Pins: the snapshots an active operation needs, kept from deletion and retention until it
ends. The snapshots domain owns the rows; the operations domain calls pin and release."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from app.snapshots.models import SnapshotPin


def pin(session: Session, operation_id: int, snapshot_ids: Iterable[int]) -> None:
    rows = [{"snapshot_id": s, "operation_id": operation_id} for s in sorted(set(snapshot_ids))]
    if rows:
        session.execute(insert(SnapshotPin).values(rows).on_conflict_do_nothing())


def release(session: Session, operation_id: int) -> None:
    session.execute(delete(SnapshotPin).where(SnapshotPin.operation_id == operation_id))


def pinned_by(session: Session, snapshot_id: int) -> list[int]:
    """The active operations that pin this snapshot."""
    return list(
        session.scalars(
            select(SnapshotPin.operation_id)
            .where(SnapshotPin.snapshot_id == snapshot_id)
            .order_by(SnapshotPin.operation_id)
        )
    )
