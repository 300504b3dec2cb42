"""Resume points (Onyx) and the Hazelcast rules: decide, per query of a new version, where its
offsets and state come from, and whether that can work. The same plan answers the
compatibility check, the resume-point builder and submit/update validation, and travels to
the worker, which materialises it. Services take the session first and never commit."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy.orm import Session

from app.core.config import Settings
from app.core.errors import Conflict, Unprocessable
from app.core.paths import PathOutsideRoot, read_checkpoint
from app.core.plans import StoredPlan
from app.jobs.models import Job, JobVersion
from app.jobs.service import get_job, get_version
from app.resume_points import compat
from app.resume_points.compat import Problem
from app.resume_points.plan import OFFSETS, STATE, Plan, QueryPlan, Source, SourceRef
from app.resume_points.restore_guards import declared_sink_problems
from app.resume_points.schemas import (
    BuildBody,
    BuildResponse,
    CompatibilityBody,
    CompatibilityResponse,
    Initialize,
    ResumeEntry,
    ResumeFrom,
    SplitEntry,
)
from app.resume_points.sources import ready_snapshot, resolve, run_source, snapshot_sources
from app.runs.models import Run
from app.snapshots.checkpoint_files import checkpoint_path, describe
from app.snapshots.errors import ExportError
from app.snapshots.schemas import Coordinates
from tidegate_runtime.checkpoints.checkpoint import latest_commit_batch


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
    return plan_by_name(version, snapshot_sources(snapshot), origin)


def plan_from_run(session: Session, settings: Settings, version: JobVersion, run: Run) -> Plan:
    """By name from a run's live checkpoints (what a snapshot of it now would hold)."""
    root = settings.resolved_checkpoint_root
    sources = {}
    for spec in run.version.queries:
        path = checkpoint_path(root, run.job.name, run.id, spec)
        try:
            with read_checkpoint(root, path) as checkpoint:
                batch = latest_commit_batch(checkpoint, planned=True)
                if checkpoint is None or batch is None:
                    continue
                ref = SourceRef(run.job.name, spec["name"], run=run.id, batch_id=batch)
                sources[spec["name"]] = Source(ref, describe(checkpoint, batch, spec))
        except (ExportError, PathOutsideRoot) as exc:
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
        sources[c.query] = run_source(session, settings, ref)
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


def revalidate(
    session: Session, settings: Settings, version: JobVersion, stored: StoredPlan
) -> Plan:
    """A stored plan (Plan.stored(), bound by plan.bind_to_*) checked again on the worker:
    each source is resolved again (the snapshot still ready, the run's batch still in its
    checkpoint) and the version checked against what it holds now. Which query resumes from
    what, and which parts, stay as the API decided them."""
    if int(stored["version"]) != version.number:
        raise Unprocessable(
            f"The stored plan is for version {stored['version']}, not {version.number}."
        )
    specs = {q["name"]: q for q in version.queries}
    resolved: dict[SourceRef, Source] = {}
    plans: list[QueryPlan] = []
    for q in stored["queries"]:
        spec, source = specs[q["query"]], q.get("source")
        if source is None:
            plans.append(QueryPlan(q["query"], compat.is_stateful(spec), None))
            continue
        ref = SourceRef(
            source["job"],
            source["query"],
            snapshot=source.get("snapshot"),
            run=source.get("run"),
            batch_id=None if source.get("snapshot") else source.get("batch_id"),
        )
        if ref not in resolved:
            resolved[ref] = resolve(session, settings, ref)
        found = resolved[ref]
        stateful = compat.is_stateful(spec) or compat.has_state(found.info)
        plans.append(
            QueryPlan(q["query"], stateful, found, tuple(q["parts"]), bool(q.get("fresh_id")))
        )
    return Plan(version.number, plans, [], _check(version, plans))


def revalidated(
    session: Session, settings: Settings, version: JobVersion, stored: StoredPlan, what: str
) -> StoredPlan:
    """A stored plan checked again (``revalidate``) and required compatible with ``what`` it
    resumes: the stored form a worker's step records."""
    plan = revalidate(session, settings, version, stored)
    require_compatible(plan, what)
    return plan.to_json()


def require_compatible(plan: Plan, what: str) -> None:
    """409 with every problem, before anything is stopped."""
    if plan.problems:
        listed = "; ".join(f"{p.query}: {p.detail}" for p in plan.problems[:5])
        raise Conflict(
            f"Version {plan.version} cannot start from {what}: {listed}",
            problems=[p.as_dict() for p in plan.problems],
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
    plan.problems.extend(declared_sink_problems(settings, version, plan))
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
