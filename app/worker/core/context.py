"""What a worker step needs: sessions, settings, backends, and fault injection for chaos tests."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from app.backends.base import Backend
from app.backends.registry import backend_for
from app.clusters.models import Cluster
from app.core.config import Settings
from app.core.db import advisory_lock
from app.core.notify import Notifier
from app.worker.core.listing import Listings

log = logging.getLogger(__name__)

# pg advisory lock namespace for "I am acting on run N" (two-int form: namespace, run id).
RUN_LOCK_NAMESPACE = 7305
# The two-int form takes int4 keys; run ids are bigint, so larger ids fold into int4 (two
# runs sharing a key only wait for each other, which is harmless).
INT4 = 2**31


@dataclass
class WorkerContext:
    factory: sessionmaker[Session]
    settings: Settings
    worker_id: str
    lease_seconds: float = 30.0
    poll_seconds: float = 1.0
    # How long a backend may not know an app before the run counts as lost.
    lost_after_seconds: float = 60.0
    # The process's one reconciler thread (started by
    # app/worker/reconcile/reconciler.py::reconciler).
    reconciler: Any = None
    # The process's LISTEN connection while it serves (app/worker/loop.py::Worker.serve);
    # None (a test's context): waits poll.
    notifier: Notifier | None = None
    # One backend listing per cluster per sweep (see app/worker/core/listing.py).
    listings: Listings = field(default_factory=Listings)
    _backends: dict[tuple[int, str], Backend] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.listings.max_age = max(self.poll_seconds, 0.5)

    def backend(self, cluster: Cluster) -> Backend:
        key = backend_key(cluster)
        with self._lock:
            if key not in self._backends:
                self._backends[key] = backend_for(cluster)
            return self._backends[key]


def backend_key(cluster: Cluster) -> tuple[int, str]:
    return (cluster.id, cluster.url)


def fault_point(name: str) -> None:
    """Chaos tests set TIDEGATE_FAULT_AT=<name> to kill the worker exactly here."""
    if os.environ.get("TIDEGATE_FAULT_AT") == name:
        log.warning("fault injection: exiting at %s", name)
        os._exit(137)


@contextmanager
def run_guard(ctx: WorkerContext, run_id: int) -> Iterator[bool]:
    """Only one worker acts on a run at a time, across processes. The lock lives on its own
    connection, so it is released if this worker dies, and is held across the short
    transactions (and the backend calls) of one reconcile pass."""
    with advisory_lock(ctx.factory, RUN_LOCK_NAMESPACE, run_id % INT4, wait=False) as acquired:
        yield acquired
