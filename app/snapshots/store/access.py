"""What every worker-side snapshot module shares: the store, its lock, and the failure."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.core.db import advisory_lock
from app.snapshots.errors import SnapshotFailed, StoreError
from app.snapshots.store.blobs import SnapshotStore

LOCK_NAMESPACE, STORE_LOCK, RETENTION_LOCK = 7306, 1, 2


@contextmanager
def store_lock(factory: sessionmaker[Session], *, exclusive: bool) -> Iterator[bool]:
    """Session-level advisory lock on its own connection (released if the worker dies)."""
    with advisory_lock(
        factory, LOCK_NAMESPACE, STORE_LOCK, shared=not exclusive, wait=not exclusive
    ) as got:
        yield got


def store_for(settings: Settings) -> SnapshotStore:
    try:
        return SnapshotStore(
            settings.resolved_snapshot_root,
            settings.snapshot_storage_options_dict,
            link_exports=settings.snapshot_export_links,
            restore_links=settings.snapshot_restore_links,
        )
    except StoreError as exc:  # misconfigured (e.g. an unknown option): not worth a retry
        raise SnapshotFailed(str(exc)) from None
