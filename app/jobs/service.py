"""Jobs and their immutable versions. Services take the session first and never commit."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, bindparam, func, select
from sqlalchemy.orm import Session

from app.audit import service as audit
from app.auth.service import Principal
from app.clusters.models import Cluster
from app.core import run_states as states
from app.core.config import Settings
from app.core.durations import parse_trigger
from app.core.errors import Conflict, NotFound, PreconditionFailed, Unprocessable
from app.core.pagination import cursor_key, cut_page, keyset_page
from app.core.paths import PathOutsideRoot, confine_checkpoint, job_checkpoint_root
from app.jobs import conf_policy, version_policy
from app.jobs import sources as source_kinds
from app.jobs.models import Job, JobVersion
from app.jobs.schemas import (
    JobCreate,
    JobUpdate,
    QueryResponse,
    QuerySpec,
    RestartPolicy,
    VersionCreate,
    VersionResponse,
)
from tidegate_runtime import contract
from tidegate_runtime.driver.drain_order import drain_stages

LATEST = Job.latest_version_number  # type: ignore[attr-defined]

# A job as its response shows it, read as plain columns in the schema's order: a page of ORM
# objects turned into models cost three quarters of a list's time (issue 24).
VIEW_COLUMNS = (
    Job.name,
    Job.description,
    Job.state,
    Job.restart_policy,
    Job.prewarm,
    Job.hot_spare,
    LATEST.label("latest_version"),
    Job.current_run_id,
    Job.next_restart_at,
    Job.revision,
    Job.created_by,
    Job.created_at,
    Job.updated_at,
)
JobView = Row[Any]
VIEW_KEYS = tuple(str(column.key) for column in select(*VIEW_COLUMNS).selected_columns)
# Built once, so a read neither builds a statement nor computes its cache key. A page starts
# after its cursor's name, or after '' (no name is empty).
VIEW_BY_NAME = select(*VIEW_COLUMNS).where(Job.name == bindparam("name"))
VIEWS = (
    select(*VIEW_COLUMNS)
    .where(Job.name > bindparam("after"))
    .order_by(Job.name)
    .limit(bindparam("limit"))
)
VIEWS_IN_STATE = VIEWS.where(Job.state == bindparam("state"))
POLICY = RestartPolicy().model_dump()

# Keys tidegate sets itself on every submission; a version may not override them.
RESERVED_CONF_PREFIXES = (contract.PREFIX,)
RESERVED_CONF_KEYS = frozenset({"spark.app.name", "spark.master", "spark.submit.deployMode"})


def get_job(session: Session, name: str, *, lock: bool = False) -> Job:
    stmt = select(Job).where(Job.name == name)
    job = session.scalar(stmt.with_for_update(key_share=True) if lock else stmt)
    if job is None:
        raise NotFound(f"No job named '{name}'. List jobs with GET /api/v1/jobs.")
    return job


def create_job(session: Session, body: JobCreate, actor: Principal) -> Job:
    if session.scalar(select(Job.id).where(Job.name == body.name)) is not None:
        raise Conflict(f"A job named '{body.name}' already exists; choose another name.")
    job = Job(
        name=body.name,
        description=body.description,
        restart_policy=body.restart_policy.model_dump(),
        prewarm=body.prewarm,
        hot_spare=body.hot_spare,
        created_by=actor.name,
    )
    session.add(job)
    session.flush()
    audit.record(session, actor, "job.create", job=job.name, status_code=201)
    return job


def list_jobs(
    session: Session, *, state: str | None, limit: int, cursor: str | None
) -> tuple[list[JobView], str | None]:
    params = {"after": cursor_key(cursor, str) or "", "limit": limit + 1}
    if state is not None:
        views = session.connection().execute(VIEWS_IN_STATE, {**params, "state": state})
    else:
        views = session.connection().execute(VIEWS, params)
    return cut_page(list(views), limit, lambda view: view.name)


def job_view(session: Session, name: str) -> JobView:
    view = session.connection().execute(VIEW_BY_NAME, {"name": name}).one_or_none()
    if view is None:
        raise NotFound(f"No job named '{name}'. List jobs with GET /api/v1/jobs.")
    return view


def update_job(
    session: Session, name: str, body: JobUpdate, if_match: str | None, actor: Principal
) -> Job:
    job = get_job(session, name, lock=True)
    if if_match is not None and if_match.strip() not in (job.etag, "*", f"W/{job.etag}"):
        raise PreconditionFailed(
            f"Job '{name}' changed since you read it (If-Match {if_match}, now {job.etag}); "
            "GET it again and retry.",
            headers={"ETag": job.etag},
        )
    changes = body.model_dump(exclude_unset=True)
    if "restart_policy" in changes:
        if changes["restart_policy"] is None:
            changes["restart_policy"] = RestartPolicy().model_dump()
        job.restart_policy = changes["restart_policy"]
    if "description" in changes:
        job.description = changes["description"]
    if changes.get("prewarm") is not None:
        job.prewarm = changes["prewarm"]
    if changes.get("hot_spare") is not None:
        job.hot_spare = changes["hot_spare"]
    session.flush()
    audit.record(session, actor, "job.update", job=name, detail={"fields": sorted(changes)})
    return job


ACTIVE_JOB_STATES = states.ACTIVE  # a job is active while its current run is


def delete_job(session: Session, name: str, actor: Principal) -> None:
    job = get_job(session, name, lock=True)
    if job.state in ACTIVE_JOB_STATES:
        raise Conflict(
            f"Job '{name}' has an active run (state {job.state}); stop or cancel it first."
        )
    session.delete(job)
    session.flush()
    audit.record(session, actor, "job.delete", job=name, status_code=204)


def latest_version_number(session: Session, job: Job) -> int | None:
    return session.scalar(select(func.max(JobVersion.number)).where(JobVersion.job_id == job.id))


def job_response(session: Session, job: Job) -> dict[str, Any]:
    """A job just written, as its response reads it (in the same transaction)."""
    return job_document(job_view(session, job.name))


def job_document(view: JobView) -> dict[str, Any]:
    """A job's response body: the view's columns, and its restart policy with PSTL's
    defaults for any key an older row lacks, in the schema's order."""
    document = dict(zip(VIEW_KEYS, view, strict=True))
    stored = document["restart_policy"] or {}
    document["restart_policy"] = {key: stored.get(key, value) for key, value in POLICY.items()}
    return document


# ---- versions ---------------------------------------------------------------------------


def derive_query_name(query: QuerySpec) -> str:
    """PSTL: without a name, a query is named after its input."""
    return "_".join(source.name for source in query.sources)[:128]


def _normalise_queries(
    queries: list[QuerySpec], settings: Settings, job: str
) -> list[dict[str, Any]]:
    names: dict[str, list[int]] = {}
    out = []
    for index, query in enumerate(queries):
        name = query.name or derive_query_name(query)
        names.setdefault(name, []).append(index)
        source_names = [s.name for s in query.sources]
        if len(set(source_names)) != len(source_names):
            raise Unprocessable(
                f"Query {index} ('{name}') lists a source name twice; source names must be unique.",
                errors=[{"field": f"queries.{index}.sources", "message": "duplicate source name"}],
            )
        checkpoint_location = query.checkpoint_location
        if checkpoint_location is not None:
            try:
                # Stored resolved: a relative path would otherwise resolve against the driver's
                # working directory, outside the root.
                checkpoint_location = str(
                    confine_checkpoint(checkpoint_location, settings.resolved_checkpoint_root, job)
                )
            except PathOutsideRoot as exc:
                folder = job_checkpoint_root(settings.resolved_checkpoint_root, job)
                raise Unprocessable(
                    f"Query '{name}': checkpoint_location {exc}. Use a path inside the job's "
                    f"folder {folder} (e.g. {folder}/{name}, or '{name}' relative to it) or "
                    "omit it to use the convention.",
                    errors=[{"field": f"queries.{index}.checkpoint_location", "message": str(exc)}],
                ) from None
        out.append(
            {
                **query.model_dump(),
                "name": name,
                "name_derived": query.name is None,
                "checkpoint_location": checkpoint_location,
            }
        )
    clashes = {n: idx for n, idx in names.items() if len(idx) > 1}
    if clashes:
        described = "; ".join(
            f"queries {', '.join(map(str, idx))} are all named '{n}'" for n, idx in clashes.items()
        )
        raise Unprocessable(
            f"Query names must be unique within a version: {described}. "
            "Give each query an explicit, unique 'name' (names derived from the input clash "
            "when two queries read the same sources).",
            errors=[
                {"field": f"queries.{i}.name", "message": f"duplicate query name '{n}'"}
                for n, idx in clashes.items()
                for i in idx
            ],
        )
    _check_chain(out)
    # A source name identifies one input of the job (startpoints address it), so the same
    # name must not mean two different inputs.
    seen: dict[str, tuple[str, dict[str, Any]]] = {}
    for q in out:
        for s in q["sources"]:
            prior = seen.setdefault(s["name"], (s["kind"], s["options"]))
            if prior != (s["kind"], s["options"]):
                raise Unprocessable(
                    f"Source '{s['name']}' is declared twice with different kind or options; "
                    "one name must mean one input."
                )
    return out


def _check_chain(queries: list[dict[str, Any]]) -> None:
    names = {q["name"] for q in queries}
    for index, q in enumerate(queries):
        unknown = [u for u in q.get("upstream") or [] if u not in names or u == q["name"]]
        if unknown:
            raise Unprocessable(
                f"Query '{q['name']}': upstream {', '.join(unknown)} is not another query of "
                f"this version (queries: {', '.join(sorted(names))}).",
                errors=[{"field": f"queries.{index}.upstream", "message": "unknown query"}],
            )
    try:
        drain_stages(queries)
    except ValueError as exc:
        raise Unprocessable(
            f"Queries cannot be upstream of each other in a loop: {exc}.",
            errors=[{"field": "queries", "message": str(exc)}],
        ) from None


def _normalise_conf(conf: dict[str, Any]) -> dict[str, str]:
    out = {}
    for key, value in conf.items():
        if key in RESERVED_CONF_KEYS or key.startswith(RESERVED_CONF_PREFIXES):
            raise Unprocessable(
                f"conf '{key}' is set by tidegate on every submission and cannot be overridden.",
                errors=[{"field": f"conf.{key}", "message": "reserved key"}],
            )
        if not key or len(key) > 256:
            raise Unprocessable("conf keys must be 1 to 256 characters.")
        out[key] = conf_policy.as_text(value)
    return out


def create_version(
    session: Session, job_name: str, body: VersionCreate, actor: Principal, settings: Settings
) -> JobVersion:
    job = get_job(session, job_name, lock=True)  # serialises version numbering per job
    cluster = session.scalar(select(Cluster).where(Cluster.name == body.cluster))
    if cluster is None:
        raise Unprocessable(
            f"No cluster named '{body.cluster}'. Register it with POST /api/v1/clusters "
            "or list them with GET /api/v1/clusters.",
            errors=[{"field": "cluster", "message": "unknown cluster"}],
        )
    file = body.app.file
    if "://" not in file and not file.startswith(("/", "file:", "local:")):
        raise Unprocessable(
            f"app.file '{file}' must be an absolute path or a URL: Spark drivers run in "
            "their own working directory.",
            errors=[{"field": "app.file", "message": "not absolute"}],
        )
    body = version_policy.check_version(body, actor, settings)
    _check_sources(body)
    queries = _normalise_queries(body.queries, settings, job.name)
    number = (latest_version_number(session, job) or 0) + 1
    version = JobVersion(
        job_id=job.id,
        number=number,
        cluster_id=cluster.id,
        app=body.app.model_dump(),
        conf=_normalise_conf(body.conf),
        queries=queries,
        description=body.description,
        created_by=actor.name,
    )
    session.add(version)
    session.flush()
    audit.record(
        session, actor, "version.create", job=job.name, target=f"version {number}", status_code=201
    )
    return version


def _check_sources(body: VersionCreate) -> None:
    errors = [
        {"field": f"queries.{q}.sources.{i}.options", "message": message}
        for q, query in enumerate(body.queries)
        for i, source in enumerate(query.sources)
        for message in source_kinds.problems(source.kind, source.options)
    ]
    if errors:
        raise Unprocessable(
            f"{len(errors)} source option problem(s), nothing was created: "
            + "; ".join(e["message"] for e in errors[:5]),
            errors=errors[:100],
        )


def get_version(session: Session, job_name: str, number: int) -> JobVersion:
    job = get_job(session, job_name)
    version = session.scalar(
        select(JobVersion).where(JobVersion.job_id == job.id, JobVersion.number == number)
    )
    if version is None:
        raise NotFound(
            f"Job '{job_name}' has no version {number}. "
            f"List them with GET /api/v1/jobs/{job_name}/versions."
        )
    return version


def list_versions(
    session: Session, job_name: str, *, limit: int, cursor: str | None
) -> tuple[list[JobVersion], str | None]:
    job = get_job(session, job_name)
    stmt = select(JobVersion).where(JobVersion.job_id == job.id)
    return keyset_page(
        session, stmt, JobVersion.number, limit=limit, cursor=cursor, descending=True
    )


def version_response(version: JobVersion) -> VersionResponse:
    queries = [
        QueryResponse.model_validate(
            {
                **q,
                "trigger_ms": parse_trigger(q["trigger"]) if q.get("trigger") else None,
                "stateful": bool(q.get("stateful_operators")),
            }
        )
        for q in version.queries
    ]
    return VersionResponse(
        job=version.job.name,
        number=version.number,
        cluster=version.cluster.name,
        app=version.app,  # type: ignore[arg-type]
        conf=version.conf,
        queries=queries,
        description=version.description,
        created_by=version.created_by,
        created_at=version.created_at,
    )
