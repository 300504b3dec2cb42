"""The order a drain finishes the queries of one job: a query's ``upstream`` (the queries
whose output it reads) first; and which state a drain's marker need not flush. Standard
library only: shared by the API and the runtime."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# Stateful operators (Spark's operatorName) whose state emits nothing when evicted: a drain
# sends no marker to a query holding only these, which would evict every key before the stop
# (minutes at gigabytes of ids) for no output.
NOTHING_TO_FLUSH = frozenset({"dedupe", "dedupeWithinWatermark"})


def drain_stages(queries: Iterable[Mapping[str, Any]]) -> list[list[str]]:
    """Query names in stages: every query's upstream lies in an earlier stage."""
    pending = {str(q["name"]): set(q.get("upstream") or []) for q in queries}
    stages: list[list[str]] = []
    while pending:
        ready = sorted(n for n, ups in pending.items() if not ups & set(pending))
        if not ready:
            raise ValueError(f"the upstream of {', '.join(sorted(pending))} forms a cycle")
        stages.append(ready)
        for name in ready:
            del pending[name]
    return stages
