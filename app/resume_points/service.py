"""Resume points (Onyx) and the Hazelcast rules: decide, per query of a new version, where its
offsets and state come from, and whether that can work. The same plan answers the
compatibility check, the resume-point builder and submit/update validation, and travels to
the worker, which materialises it. Services take the session first and never commit."""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core.config import Settings
from app.core.errors import Conflict, NotFound, Unprocessable
from app.jobs.models import Job, JobVersion
from app.jobs.service import get_job, get_version
from app.resume_points.schemas import (
    BuildBody,
    BuildResponse,
    CompatibilityBody,
    CompatibilityResponse,
    Initialize,
    ProblemResponse,
    QueryOutcome,
    ResumeEntry,
    ResumeFrom,
    SplitEntry,
)
from app.runs.models import Run
from app.snapshots import compat
from app.snapshots.compat import Problem
from app.snapshots.export import ExportError, checkpoint_path, committed_batch, describe
from app.snapshots.models import READY, Snapshot
from app.snapshots.schemas import Coordinates

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
    """A resolved reference and what its checkpoint recorded (see ``export.describe``)."""

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

    def to_json(self) -> dict[str, Any]:
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
                    else {
                        **q.source.ref.entry(),
                        "snapshot_id": q.source.snapshot_id,
                        "checkpoint": q.source.info.get("checkpoint"),
                        "batch_id": q.source.info.get("batch_id"),
                    },
                }
                for q in self.queries
            ],
        }


# ---- resolving references -----------------------------------------------------------------


def ready_snapshot(session: Session, job_name: str, name: str) -> Snapshot:
    """A snapshot that can be started from, or a 422/409 that says why not."""
    try:
        job = get_job(session, job_name)
    except NotFound:
        raise Unprocessable(f"No job named '{job_name}' to take snapshot '{name}' from.") from None
    snapshot = session.scalar(
        select(Snapshot).where(Snapshot.job_id == job.id, Snapshot.name == name)
    )
    if snapshot is None:
        raise Unprocessable(
            f"Job '{job_name}' has no snapshot named '{name}'. "
            f"List them with GET /api/v1/snapshots?job={job_name}."
        )
    if snapshot.state != READY:
        raise Conflict(
            f"Snapshot '{name}' of job '{job_name}' is {snapshot.state}, not ready"
            + (f": {snapshot.error}" if snapshot.error else "; wait for its operation")
            + ".",
            snapshot_state=snapshot.state,
        )
    return snapshot


def _snapshot_sources(snapshot: Snapshot) -> dict[str, Source]:
    return {
        name: Source(SourceRef(snapshot.job.name, name, snapshot=snapshot.name), info, snapshot.id)
        for name, info in (snapshot.queries or {}).items()
        if info.get("batch_id") is not None
    }


def _run_source(session: Session, settings: Settings, ref: SourceRef) -> Source:
    try:
        job = get_job(session, ref.job)
    except NotFound:
        raise Unprocessable(f"No job named '{ref.job}' (resume point for run {ref.run}).") from None
    run = session.get(Run, ref.run)
    if run is None or run.job_id != job.id:
        raise Unprocessable(
            f"Job '{ref.job}' has no run {ref.run}; list them with GET /api/v1/jobs/{ref.job}/runs."
        )
    spec = next((q for q in run.version.queries if q["name"] == ref.query), None)
    if spec is None:
        names = ", ".join(q["name"] for q in run.version.queries)
        raise Unprocessable(f"Run {run.id} has no query '{ref.query}' (it has: {names}).")
    checkpoint = checkpoint_path(settings.resolved_checkpoint_root, job.name, run.id, spec)
    latest = committed_batch(checkpoint)
    batch = ref.batch_id if ref.batch_id is not None else latest
    if batch is None:
        raise Unprocessable(
            f"Query '{ref.query}' of run {run.id} has no committed batch yet: nothing to resume."
        )
    if (
        not (checkpoint / "commits" / str(batch)).exists()
        or not (checkpoint / "offsets" / str(batch)).exists()
    ):
        raise Unprocessable(
            f"Batch {batch} of query '{ref.query}' of run {run.id} is not in its checkpoint "
            f"(latest committed: {latest}); use GET /api/v1/jobs/{ref.job}/snapshot-coordinates."
        )
    try:
        info = describe(checkpoint, batch, spec)
    except ExportError as exc:
        raise Unprocessable(str(exc)) from None
    return Source(replace(ref, batch_id=batch), info)


def resolve(session: Session, settings: Settings, ref: SourceRef) -> Source:
    if ref.snapshot is not None:
        snapshot = ready_snapshot(session, ref.job, ref.snapshot)
        sources = _snapshot_sources(snapshot)
        if ref.query not in sources:
            has = ", ".join(sorted(sources)) or "none"
            raise Unprocessable(
                f"Snapshot '{ref.snapshot}' of job '{ref.job}' has no committed query "
                f"'{ref.query}' (it has: {has})."
            )
        return sources[ref.query]
    return _run_source(session, settings, ref)


# ---- plans ------------------------------------------------------------------------------


def _check(version: JobVersion, plans: list[QueryPlan]) -> list[Problem]:
    specs = {q["name"]: q for q in version.queries}
    problems: list[Problem] = []
    for plan in plans:
        if plan.source is None:
            continue
        spec, info = specs[plan.query], plan.source.info
        declared = [s["name"] for s in spec.get("sources") or []]
        stored = info.get("sources") or []
        if len(stored) != len(declared):
            problems.append(
                Problem(
                    plan.query,
                    "sources",
                    f"{plan.source.ref.label} read {len(stored)} source(s) "
                    f"({', '.join(s['name'] for s in stored)}); the version's query reads "
                    f"{len(declared)} ({', '.join(declared)}). Spark matches offsets to sources "
                    "by position, so the sources cannot change while resuming offsets.",
                    expected=len(stored),
                    actual=len(declared),
                )
            )
        if STATE in plan.parts:
            problems += compat.check_state(
                plan.query, spec, version.conf, plan.source.ref.label, info
            )
    return problems


def plan_by_name(version: JobVersion, sources: dict[str, Source], origin: str) -> Plan:
    """Hazelcast's rules: a query in both resumes, a new one initializes, one only in the
    source is ignored; a stateful query that looks renamed is refused."""
    plans = [
        QueryPlan(
            q["name"],
            compat.is_stateful(q)
            or (q["name"] in sources and compat.has_state(sources[q["name"]].info)),
            sources.get(q["name"]),
            (OFFSETS, STATE) if q["name"] in sources else (),
        )
        for q in version.queries
    ]
    names = {q["name"] for q in version.queries}
    dropped = sorted(n for n in sources if n not in names)
    problems = _check(version, plans)
    lost = [n for n in dropped if compat.has_state(sources[n].info)]
    for plan in plans:
        if plan.source is None and plan.stateful and lost:
            example = {plan.query: {"mode": "resume", "query": lost[0], "...": "as built"}}
            problems.append(
                Problem(
                    plan.query,
                    "renamed",
                    f"Stateful query '{plan.query}' is not in {origin}, and {origin}'s stateful "
                    f"quer{'y' if len(lost) == 1 else 'ies'} {', '.join(map(repr, lost))} "
                    f"{'is' if len(lost) == 1 else 'are'} not in version {version.number}: a "
                    "renamed stateful query would lose its state. Map it with a resume point "
                    f"(e.g. {example}; POST …/resume-points/build gives one to edit), or "
                    f"initialize '{plan.query}' explicitly in a resume point to start it empty.",
                    expected=lost,
                    actual=plan.query,
                )
            )
    return Plan(version.number, plans, dropped, problems)


def plan_from_snapshot(
    session: Session, version: JobVersion, job_name: str, snapshot_name: str
) -> Plan:
    snapshot = ready_snapshot(session, job_name, snapshot_name)
    origin = f"snapshot '{snapshot_name}'"
    return plan_by_name(version, _snapshot_sources(snapshot), origin)


def plan_from_run(session: Session, settings: Settings, version: JobVersion, run: Run) -> Plan:
    """By name from a run's live checkpoints (what a snapshot of it now would hold)."""
    sources = {}
    for spec in run.version.queries:
        checkpoint = checkpoint_path(settings.resolved_checkpoint_root, run.job.name, run.id, spec)
        batch = committed_batch(checkpoint)
        if batch is not None:
            ref = SourceRef(run.job.name, spec["name"], run=run.id, batch_id=batch)
            try:
                sources[spec["name"]] = Source(ref, describe(checkpoint, batch, spec))
            except ExportError as exc:
                raise Unprocessable(f"Run {run.id}'s checkpoint cannot be read: {exc}") from None
    return plan_by_name(version, sources, f"run {run.id}")


def plan_from_coordinates(
    session: Session, settings: Settings, version: JobVersion, coordinates: list[Coordinates]
) -> Plan:
    sources: dict[str, Source] = {}
    for c in coordinates:
        if c.query in sources:
            raise Unprocessable(f"The coordinates name query '{c.query}' twice.")
        ref = SourceRef(c.job, c.query, run=c.run, batch_id=c.batch_id)
        sources[c.query] = _run_source(session, settings, ref)
    runs = sorted({f"{c.job}/{c.run}" for c in coordinates})
    return plan_by_name(version, sources, f"run{'s' if len(runs) > 1 else ''} {', '.join(runs)}")


def _ref(spec: ResumeFrom, job_name: str) -> SourceRef:
    return SourceRef(
        spec.job or job_name,
        spec.query,
        snapshot=spec.snapshot,
        run=spec.run,
        batch_id=spec.batch_id,
    )


def plan_from_resume_point(
    session: Session,
    settings: Settings,
    version: JobVersion,
    job_name: str,
    resume_point: dict[str, ResumeEntry],
) -> Plan:
    """Onyx: every stateful query needs an entry; each entry resumes or initializes."""
    specs = {q["name"]: q for q in version.queries}
    unknown = sorted(set(resume_point) - set(specs))
    if unknown:
        raise Unprocessable(
            f"The resume point names quer{'y' if len(unknown) == 1 else 'ies'} "
            f"{', '.join(map(repr, unknown))} that version {version.number} does not have "
            f"(it has: {', '.join(specs)}).",
            errors=[{"field": f"resume_point.{n}", "message": "unknown query"} for n in unknown],
        )
    missing = [n for n, q in specs.items() if compat.is_stateful(q) and n not in resume_point]
    if missing:
        raise Unprocessable(
            f"The resume point has no entry for stateful quer{'y' if len(missing) == 1 else 'ies'} "
            f"{', '.join(map(repr, missing))} of version {version.number}. Every stateful query "
            'needs one: {"mode": "resume", "snapshot": ..., "query": ...} to take state, or '
            '{"mode": "initialize"} to start empty.',
            missing=missing,
            errors=[{"field": f"resume_point.{n}", "message": "missing entry"} for n in missing],
        )
    resolved: dict[SourceRef, Source] = {}
    plans: list[QueryPlan] = []
    for name, spec in specs.items():
        entry = resume_point.get(name, Initialize(mode="initialize"))
        offsets, state = (
            (entry.offsets, entry.state) if isinstance(entry, SplitEntry) else (entry, entry)
        )
        stateful = compat.is_stateful(spec)
        if isinstance(offsets, Initialize) and isinstance(state, Initialize):
            plans.append(QueryPlan(name, stateful, None))
            continue
        if isinstance(offsets, Initialize):
            raise Unprocessable(
                f"Query '{name}': resuming state with initialized offsets is not possible: "
                "Spark keeps a query's state versions by batch id, so its state only loads "
                "together with the offsets of that batch. Resume both, or initialize both "
                "and set startpoints to choose where it reads."
            )
        parts: tuple[str, ...] = (OFFSETS, STATE)
        ref = _ref(offsets, job_name)
        if ref not in resolved:
            resolved[ref] = resolve(session, settings, ref)
        # Undeclared, but the checkpoint it resumes from holds state: it is stateful.
        stateful = stateful or compat.has_state(resolved[ref].info)
        if isinstance(state, Initialize):
            if stateful:
                raise Unprocessable(
                    f"Query '{name}' is stateful: resuming its offsets with empty state is not "
                    "possible (Spark would look for the state of that batch). Initialize both "
                    "and set startpoints to start reading at those offsets."
                )
            parts = (OFFSETS,)
        elif _ref(offsets, job_name) != _ref(state, job_name):
            raise Unprocessable(
                f"Query '{name}': offsets and state must come from the same snapshot query or "
                "run coordinates (Spark's state versions follow the batch ids of its offsets)."
            )
        plans.append(QueryPlan(name, stateful, resolved[ref], parts))
    used: dict[SourceRef, int] = {}
    for plan in plans:
        if plan.source is not None:
            used[plan.source.ref] = used.get(plan.source.ref, 0) + 1
    plans = [
        replace(p, fresh_id=True)
        if p.source and (used[p.source.ref] > 1 or p.source.ref.query != p.query)
        else p
        for p in plans
    ]
    return Plan(version.number, plans, [], _check(version, plans))


def plan_for_request(
    session: Session,
    settings: Settings,
    job: Job,
    version: JobVersion,
    *,
    snapshot: str | None,
    snapshot_job: str | None = None,
    resume_point: dict[str, ResumeEntry] | None = None,
) -> Plan:
    if resume_point is not None:
        return plan_from_resume_point(session, settings, version, job.name, resume_point)
    assert snapshot is not None
    return plan_from_snapshot(session, version, snapshot_job or job.name, snapshot)


def require_compatible(plan: Plan, what: str) -> None:
    """409 with every problem, before anything is stopped."""
    if plan.problems:
        listed = "; ".join(f"{p.query}: {p.detail}" for p in plan.problems[:5])
        raise Conflict(
            f"Version {plan.version} cannot start from {what}: {listed}",
            problems=[p.as_dict() for p in plan.problems],
        )


def require_restorable(session: Session, settings: Settings, job: Job, plan: Plan) -> None:
    """A query with its own fixed checkpoint_location can only be restored into an empty one
    (a per-run location by convention never exists yet)."""
    version = get_version(session, job.name, plan.version)
    specs = {q["name"]: q for q in version.queries}
    for q in plan.queries:
        location = specs[q.query].get("checkpoint_location")
        if q.source is None or not location:
            continue
        path = checkpoint_path(settings.resolved_checkpoint_root, job.name, 0, specs[q.query])
        if path.exists() and any(path.iterdir()):
            raise Unprocessable(
                f"Query '{q.query}' has a fixed checkpoint_location ({location}) that already "
                "holds a checkpoint; a snapshot can only be restored into an empty one. Omit "
                "checkpoint_location (per-run checkpoints) or empty it first."
            )
    require_sink_not_ahead(session, job, plan)


_FILE_SINK = re.compile(r"^FileSink\[(?P<path>.+)\]$")


def file_sink_batch(description: str | None) -> tuple[str, int] | None:
    """A file sink (from its progress description, ``FileSink[<path>]``) on this machine and
    the latest batch id in its ``_spark_metadata`` log: Spark's file sink skips every batch id
    at or below it."""
    match = _FILE_SINK.match(description or "")
    if match is None:
        return None
    path = match.group("path")
    local = path[len("file:") :] if path.startswith("file:") else path
    if "://" in local:
        return None
    batches = []
    with contextlib.suppress(OSError):
        for name in os.listdir(os.path.join(local, "_spark_metadata")):
            if (found := re.fullmatch(r"(\d+)(?:\.compact)?", name)) is not None:
                batches.append(int(found.group(1)))
    return (path, max(batches)) if batches else None


def _sink_runs(session: Session, job: Job, q: QueryPlan) -> list[tuple[Run, str]]:
    """Runs whose sink for this query may hold later batches: the run the state comes from
    (its query as the source named it) and the job's current or last run."""
    assert q.source is not None
    runs: list[tuple[Run, str]] = []
    run_id = q.source.ref.run
    if run_id is None and q.source.snapshot_id is not None:
        snapshot = session.get(Snapshot, q.source.snapshot_id)
        run_id = snapshot.run_id if snapshot is not None else None
    if run_id is not None and (run := session.get(Run, run_id)) is not None:
        runs.append((run, q.source.ref.query))
    current = session.get(Run, job.current_run_id) if job.current_run_id is not None else None
    if current is not None and current.id != run_id:
        runs.append((current, q.query))
    return runs


def require_sink_not_ahead(session: Session, job: Job, plan: Plan) -> None:
    """Restoring at batch N a query whose file sink already holds batch M > N loses output:
    Spark's file sink skips the re-run batch ids N+1..M. Refused (409) when a run's progress
    names a local file sink whose ``_spark_metadata`` is past the restored batch."""
    for q in plan.queries:
        if q.source is None or q.source.info.get("batch_id") is None:
            continue
        if q.source.snapshot_id is None and q.source.ref.run == job.current_run_id:
            continue  # an update from the live run: its stop finishes the batch in flight
        restored = int(q.source.info["batch_id"])
        for run, name in _sink_runs(session, job, q):
            sink = file_sink_batch(((run.progress or {}).get(name) or {}).get("sink"))
            if sink is not None and sink[1] > restored:
                raise Conflict(
                    f"Query '{q.query}' would restart at batch {restored + 1} from "
                    f"{q.source.ref.label}, but the file sink {sink[0]} that run {run.id} wrote "
                    f"already holds batches up to {sink[1]}: Spark's file sink skips batch ids it "
                    f"has written, so batches {restored + 1}..{sink[1]} of the new run would be "
                    "lost. Start from a snapshot at or after that batch, or have the new version "
                    "write to another (empty) path.",
                    query=q.query,
                    restored_batch=restored,
                    sink=sink[0],
                    sink_batch=sink[1],
                )


def compatibility(
    session: Session, settings: Settings, job_name: str, body: CompatibilityBody
) -> CompatibilityResponse:
    job = get_job(session, job_name)
    version = get_version(session, job_name, body.version)
    plan = plan_for_request(
        session,
        settings,
        job,
        version,
        snapshot=body.snapshot,
        snapshot_job=body.snapshot_job,
        resume_point=body.resume_point,
    )
    return plan.response()


def build(session: Session, settings: Settings, job_name: str, body: BuildBody) -> BuildResponse:
    """Onyx's build-resume-point: every query mapped by name to a snapshot or coordinates."""
    get_job(session, job_name)
    version = get_version(session, job_name, body.version)
    if body.snapshot is not None:
        plan = plan_from_snapshot(session, version, body.snapshot_job or job_name, body.snapshot)
    else:
        plan = plan_from_coordinates(session, settings, version, body.coordinates or [])
    return BuildResponse(**plan.response().model_dump(), resume_point=plan.resume_point())
