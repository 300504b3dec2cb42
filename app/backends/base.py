"""The contract every Spark backend implements.

The worker only talks to a backend through this protocol, so the standalone REST
submission API, a Livy service and the embedded local runner are interchangeable.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Protocol


class BackendError(Exception):
    """A backend call failed. ``temporary`` tells the worker whether retrying can help."""

    def __init__(self, message: str, *, temporary: bool, detail: str | None = None) -> None:
        super().__init__(message)
        self.temporary = temporary
        self.detail = detail


class TemporaryBackendError(BackendError):
    """Network trouble, 5xx, a master that is not ready yet: retry with backoff."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message, temporary=True, detail=detail)


class PermanentBackendError(BackendError):
    """The backend refused the request or the app cannot run: fail the operation."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message, temporary=False, detail=detail)


class AppState(enum.StrEnum):
    """What a backend says about one submitted application, normalised."""

    PENDING = "pending"  # accepted, not running yet (SUBMITTED, not_started, starting)
    RUNNING = "running"
    SUCCEEDED = "succeeded"  # FINISHED, success
    FAILED = "failed"  # FAILED, ERROR, dead
    KILLED = "killed"  # KILLED, killed
    UNKNOWN = "unknown"  # UNKNOWN / RELAUNCHING / recovering / not found any more

    @property
    def terminal(self) -> bool:
        return self in (AppState.SUCCEEDED, AppState.FAILED, AppState.KILLED)


@dataclass(frozen=True)
class SubmitSpec:
    """One PySpark application to start. ``tag`` is unique per run and attempt and is used
    as the Spark app name / Livy batch name, so a resumed worker can find what it submitted."""

    tag: str
    file: str  # absolute path (or URL the cluster can read) of the PySpark main file
    py_files: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    conf: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AppStatus:
    backend_id: str
    state: AppState
    raw_state: str  # the backend's own word, for people
    message: str | None = None  # e.g. the tail of the driver's stderr when it failed


class Backend(Protocol):
    def ready(self) -> bool: ...

    def submit(self, spec: SubmitSpec) -> str:
        """Start the application; returns the backend id (driver id / batch id)."""
        ...

    def status(self, backend_id: str) -> AppStatus: ...

    def statuses(self) -> dict[str, AppStatus] | None:
        """Every application the backend knows, by backend id, in one listing (without the
        failure messages ``status`` adds); None when it cannot list. The reconciler's sweep
        reads this once per cluster instead of asking about each run."""
        ...

    def kill(self, backend_id: str) -> None:
        """Idempotent: killing an app that already ended is not an error."""
        ...

    def find(self, tag: str) -> str | None:
        """The backend id of an application submitted with this tag, if the backend knows one."""
        ...

    def log_tail(self, backend_id: str, lines: int = 50) -> str | None: ...
