"""The JSON form of a plan (where each query of a version starts), as the API stores it on the
operation (``operations.plan``) and the worker binds, records in its steps and materialises.
Computed by app/resume_points/plan.py; it lives here, below every domain, because the
snapshots domain restores from it and the worker reads it, and neither may import
resume_points' logic to know its shape."""

from __future__ import annotations

from typing import Any, TypedDict


class PlannedSource(TypedDict, total=False):
    """Where one query resumes from: a snapshot's query (``snapshot``) or a run's query at a
    batch (``run``, ``batch_id``; ``batch_id`` None: that run's latest committed batch).
    ``snapshot_id`` and ``checkpoint`` are what the source resolved to when planned."""

    mode: str  # "resume"
    job: str
    query: str
    snapshot: str
    run: int
    batch_id: int | None
    snapshot_id: int | None
    checkpoint: str | None


class PlannedQuery(TypedDict):
    query: str
    parts: list[str]  # "offsets", "state": what of the source it takes
    fresh_id: bool  # a new query id (a renamed query, or one source feeding several)
    source: PlannedSource | None  # None: starts on a new, empty checkpoint


class StoredPlan(TypedDict, total=False):
    version: int
    queries: list[PlannedQuery]
    # Where the API planned it from ({"kind": "snapshot" | "resume_point" | "run" | "fresh",
    # ...}); only on the stored form.
    origin: dict[str, Any]


def sources(plan: StoredPlan) -> dict[str, Any]:
    """Where each query of ``plan`` starts, as an operation's result shows it: the source
    without what it resolved to (``snapshot_id``, ``checkpoint``), or ``initialize``."""
    return {
        q["query"]: (
            {k: v for k, v in source.items() if k not in ("snapshot_id", "checkpoint")}
            if (source := q.get("source"))
            else {"mode": "initialize"}
        )
        for q in plan["queries"]
    }
