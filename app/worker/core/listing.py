"""What each backend lists, read once per cluster per sweep.

The sweep observes every run on a backend. Asking about each run costs one request per run
(a thousand runs, a thousand requests a pass); one listing per cluster (Livy ``GET
/batches``, the standalone master's ``/json/``) answers them all. A listing is reused for
``max_age`` seconds, so a dead driver is seen at most one sweep plus ``max_age`` late.

A status from a listing may be that old, which is safe for observing: an application's state
only moves forward, so a stale answer delays what the next sweep sees and never reverses it
(a run's ``observed_state`` does not go from RUNNING back to PENDING on one, either).
What must be current (a pass an operation waits on, the check after a kill, fencing, a
failure's message) asks the backend directly.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from app.backends.base import AppState, AppStatus, Backend, BackendError

log = logging.getLogger(__name__)


@dataclass
class _Listing:
    taken_at: float
    statuses: dict[str, AppStatus] | None  # None: the backend cannot list (or failed to)


@dataclass
class Listings:
    max_age: float = 1.0
    _taken: dict[object, _Listing] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def forget(self) -> None:
        """A new sweep starts: each cluster is listed anew, once."""
        with self._lock:
            self._taken.clear()

    def status(self, key: object, backend: Backend, backend_id: str, *, fresh: bool) -> AppStatus:
        """``backend_id``'s status from the cluster's listing, or from the backend itself when
        ``fresh``, when the listing lacks it, or for a failure (its message is not listed)."""
        if not fresh:
            listed = self.listed(key, backend).get(backend_id)
            if listed is not None and listed.state is not AppState.FAILED:
                return listed
        return backend.status(backend_id)

    def listed(self, key: object, backend: Backend) -> dict[str, AppStatus]:
        """The cluster's listing (taken now if there is none younger than ``max_age``);
        empty when the backend cannot list."""
        with self._lock:
            now = time.monotonic()
            current = self._taken.get(key)
            if current is None or now - current.taken_at > self.max_age:
                try:
                    statuses = backend.statuses()
                except BackendError as exc:  # each run asks for itself this time
                    log.warning("could not list the backend's applications: %s", exc)
                    statuses = None
                current = self._taken[key] = _Listing(time.monotonic(), statuses)
            return current.statuses or {}
