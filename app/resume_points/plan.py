"""Where each query of a new version resumes from (the plan), and its response and JSON forms."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from app.core.plans import PlannedQuery, PlannedSource, StoredPlan
from app.resume_points.compat import Problem
from app.resume_points.schemas import CompatibilityResponse, ProblemResponse, QueryOutcome

OFFSETS, STATE = "offsets", "state"


@dataclass(frozen=True)
class SourceRef:
    """Where one query resumes from: a snapshot's query, or a run's query at a batch."""

    job: str
    query: str
    snapshot: str | None = None
    run: int | None = None
    batch_id: int | None = None

    @property
    def label(self) -> str:
        if self.snapshot is not None:
            return f"snapshot '{self.snapshot}' of job '{self.job}' (query '{self.query}')"
        return f"run {self.run} of job '{self.job}' (query '{self.query}', batch {self.batch_id})"

    def entry(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": "resume", "job": self.job, "query": self.query}
        if self.snapshot is not None:
            out["snapshot"] = self.snapshot
        else:
            out["run"], out["batch_id"] = self.run, self.batch_id
        return out


@dataclass(frozen=True)
class Source:
    """A resolved reference and what its checkpoint recorded (see
    ``app.snapshots.checkpoint_files.describe``)."""

    ref: SourceRef
    info: dict[str, Any]
    snapshot_id: int | None = None


@dataclass(frozen=True)
class QueryPlan:
    query: str
    stateful: bool
    source: Source | None  # None: initialize
    parts: tuple[str, ...] = ()
    # A renamed query, or a source feeding several queries of one run, gets a new query id:
    # Spark refuses two active queries with the same id.
    fresh_id: bool = False


@dataclass
class Plan:
    version: int
    queries: list[QueryPlan]
    dropped: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def compatible(self) -> bool:
        return not self.problems

    def response(self) -> CompatibilityResponse:
        outcomes = [
            QueryOutcome(
                query=q.query,
                outcome="resume" if q.source else "initialize",
                source=q.source.ref.entry() if q.source else None,
                parts=list(q.parts),
                detail=(
                    f"from {q.source.ref.label}" + ("" if STATE in q.parts else ", offsets only")
                    if q.source
                    else ("starts with empty state" if q.stateful else "starts fresh")
                ),
            )
            for q in self.queries
        ] + [
            QueryOutcome(query=name, outcome="dropped", detail="not in the version: ignored")
            for name in self.dropped
        ]
        return CompatibilityResponse(
            compatible=self.compatible,
            version=self.version,
            queries=outcomes,
            resume=[q.query for q in self.queries if q.source],
            initialize=[q.query for q in self.queries if not q.source],
            dropped=self.dropped,
            problems=[ProblemResponse.model_validate(p.as_dict()) for p in self.problems],
        )

    def resume_point(self) -> dict[str, Any]:
        return {
            q.query: q.source.ref.entry() if q.source else {"mode": "initialize"}
            for q in self.queries
        }

    def stored(self, origin: dict[str, Any]) -> StoredPlan:
        """What the API keeps on the operation (``operations.plan``): the JSON form below plus
        where it was planned from, ``{"kind": "snapshot" | "resume_point" | "run" | "fresh",
        ...}``. The worker binds and re-validates it (service.revalidate); it never re-plans."""
        return {**self.to_json(), "origin": origin}

    def to_json(self) -> StoredPlan:
        """What the worker needs to materialise the run's checkpoints."""
        return {
            "version": self.version,
            "queries": [
                {
                    "query": q.query,
                    "parts": list(q.parts),
                    "fresh_id": q.fresh_id,
                    "source": None
                    if q.source is None
                    else cast(
                        PlannedSource,
                        {
                            **q.source.ref.entry(),
                            "snapshot_id": q.source.snapshot_id,
                            "checkpoint": q.source.info.get("checkpoint"),
                            "batch_id": q.source.info.get("batch_id"),
                        },
                    ),
                }
                for q in self.queries
            ],
        }


def fresh(version: int, queries: list[str]) -> StoredPlan:
    """The stored form of a plan where every query starts on a new, empty checkpoint (an update
    by drain or stateless: the startpoints carry the hand-off, not a checkpoint)."""
    return {
        "version": version,
        "queries": [{"query": q, "parts": [], "fresh_id": False, "source": None} for q in queries],
        "origin": {"kind": "fresh"},
    }


def bind_to_latest(stored: StoredPlan, run_id: int) -> StoredPlan:
    """The stored plan with every source from run ``run_id`` moved to that run's latest
    committed batch (the dry run of an update: the run went on committing since the API
    planned)."""
    queries = []
    for q in stored["queries"]:
        source = q.get("source")
        if source is not None and source.get("run") == run_id:
            q = {**q, "source": {**source, "batch_id": None}}
        queries.append(q)
    return {**stored, "queries": queries}


def bind_to_snapshot(stored: StoredPlan, run_id: int, snapshot: str, held: set[str]) -> StoredPlan:
    """The stored plan with every source from run ``run_id`` moved to the same query of
    ``snapshot``, the snapshot the update saved of that run (``held``: the queries it holds).
    A plan by name means "resume what the source holds": a query it initialized only because
    the run had not committed it yet resumes too once the snapshot holds it."""
    by_name = stored.get("origin", {}).get("kind") == "run"
    queries: list[PlannedQuery] = []
    for q in stored["queries"]:
        source = q.get("source")
        if source is not None and source.get("run") == run_id:
            moved: PlannedSource = {
                "mode": "resume",
                "job": source["job"],
                "query": source["query"],
                "snapshot": snapshot,
            }
            q = {**q, "source": moved}
        elif source is None and by_name and q["query"] in held:
            job = stored["origin"]["job"]
            resumed: PlannedSource = {
                "mode": "resume",
                "job": job,
                "query": q["query"],
                "snapshot": snapshot,
            }
            q = {**q, "parts": [OFFSETS, STATE], "source": resumed}
        queries.append(q)
    return {**stored, "queries": queries}
