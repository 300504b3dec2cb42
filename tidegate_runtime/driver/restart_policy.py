"""The per-query restart policy, its arithmetic alone (query_restarts.py acts on it). PSTL's
per-query supervision: a query that fails is restarted alone, on its checkpoint,
after an exponential backoff, while the driver's other queries keep running. The driver
itself ends (and the control plane restarts it) only when a query has used up its restarts.

The policy is the job's restart policy, sent in the run's directives in seconds; each query
counts its own failures, and a query that ran ``stable_period`` since its last start counts
from zero again. Pure logic: the runtime (tidegate_runtime/driver/runtime.py) asks it what to do."""

from __future__ import annotations

from dataclasses import dataclass, field

from tidegate_runtime import contract


@dataclass(frozen=True)
class RestartPolicy:
    enabled: bool = False
    min_backoff: float = 1.0
    max_backoff: float = 3600.0
    random_factor: float = 0.0
    max_attempts: int | None = None  # restarts per query before the driver gives up
    stable_period: float = 60.0

    @classmethod
    def from_directives(cls, policy: contract.QueryRestartPolicy | None) -> RestartPolicy:
        if not policy:
            return cls()  # an unmanaged job, or a control plane that sends none: no supervision
        return cls(
            enabled=bool(policy.get("enabled", True)),
            min_backoff=float(policy["min_backoff_seconds"]),
            max_backoff=float(policy["max_backoff_seconds"]),
            random_factor=float(policy.get("random_factor") or 0.0),
            max_attempts=policy.get("max_attempts"),
            stable_period=float(policy["stable_period_seconds"]),
        )

    def backoff(self, failures: int) -> float:
        """The wait before restart number ``failures`` (1 for the first): doubled each time
        from min_backoff up to max_backoff, then stretched by up to random_factor."""
        return contract.backoff_seconds(
            self.min_backoff, self.max_backoff, self.random_factor, failures - 1
        )


@dataclass
class _Query:
    failures: int = 0  # since it last ran stable_period
    started_at: float = 0.0
    due_at: float | None = None  # waiting to be restarted at this (monotonic) time


@dataclass(frozen=True)
class Verdict:
    """What to do with a query that failed: restart it in ``restart_in`` seconds, or give up
    (``restart_in`` None: the driver ends with the query's error)."""

    failures: int
    restart_in: float | None


@dataclass
class Supervisor:
    policy: RestartPolicy = field(default_factory=RestartPolicy)
    _queries: dict[str, _Query] = field(default_factory=dict)

    def started(self, name: str, now: float) -> None:
        query = self._queries.setdefault(name, _Query())
        query.started_at, query.due_at = now, None

    def failed(self, name: str, now: float) -> Verdict:
        query = self._queries.setdefault(name, _Query(started_at=now))
        if now - query.started_at >= self.policy.stable_period:
            query.failures = 0  # it was healthy long enough: a new series of failures
        query.failures += 1
        limit = self.policy.max_attempts
        if not self.policy.enabled or (limit is not None and query.failures > limit):
            return Verdict(query.failures, None)
        wait = self.policy.backoff(query.failures)
        query.due_at = now + wait
        return Verdict(query.failures, wait)

    def waiting(self, name: str) -> bool:
        query = self._queries.get(name)
        return query is not None and query.due_at is not None

    @property
    def any_waiting(self) -> bool:
        return any(q.due_at is not None for q in self._queries.values())

    def due(self, now: float) -> list[str]:
        """The queries whose backoff is over."""
        return [n for n, q in self._queries.items() if q.due_at is not None and q.due_at <= now]

    def hurry(self) -> None:
        """A drain needs every query: the waiting ones restart at once."""
        for query in self._queries.values():
            if query.due_at is not None:
                query.due_at = 0.0
