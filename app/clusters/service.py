"""Spark targets, and the backend client for each."""

from __future__ import annotations

import logging
import threading
import time

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.audit import service as audit
from app.auth.service import Principal
from app.backends.base import BackendError
from app.backends.registry import backend_for, field_problems
from app.clusters.models import Cluster
from app.clusters.schemas import ClusterCreate, ClusterResponse
from app.core.errors import Conflict, NotFound, Unprocessable
from app.core.pagination import keyset_page

log = logging.getLogger(__name__)


def get_cluster(session: Session, name: str) -> Cluster:
    cluster = session.scalar(select(Cluster).where(Cluster.name == name))
    if cluster is None:
        raise NotFound(f"No cluster named '{name}'. List them with GET /api/v1/clusters.")
    return cluster


def check_for_kind(body: ClusterCreate) -> None:
    """The cluster's fields against what its kind's backend spec requires and uses."""
    problems = field_problems(body.kind, body.model_dump())
    if problems:
        raise Unprocessable(
            f"This {body.kind} cluster cannot be registered: "
            + "; ".join(p["message"] for p in problems)
            + ".",
            errors=problems,
        )


def create_cluster(session: Session, body: ClusterCreate, actor: Principal) -> Cluster:
    check_for_kind(body)
    if session.scalar(select(Cluster.id).where(Cluster.name == body.name)) is not None:
        raise Conflict(f"A cluster named '{body.name}' already exists.")
    creds = None
    if body.credentials is not None:
        creds = {
            k: (v.get_secret_value() if hasattr(v, "get_secret_value") else v)
            for k, v in body.credentials
            if v is not None
        }
    cluster = Cluster(
        name=body.name,
        kind=body.kind,
        url=body.url.rstrip("/"),
        master_url=body.master_url,
        ui_url=body.ui_url.rstrip("/") if body.ui_url else None,
        description=body.description,
        credentials=creds or None,
    )
    session.add(cluster)
    session.flush()
    audit.record(session, actor, "cluster.create", target=cluster.name, status_code=201)
    return cluster


def delete_cluster(session: Session, name: str, actor: Principal) -> None:
    cluster = get_cluster(session, name)
    try:
        # job_versions.cluster_id is ON DELETE RESTRICT: the database says whether a job
        # version still targets the cluster (clusters sit below jobs and do not query them).
        with session.begin_nested():
            session.delete(cluster)
    except IntegrityError:
        raise Conflict(
            f"Cluster '{name}' is the target of job versions; it cannot be removed."
        ) from None
    audit.record(session, actor, "cluster.delete", target=name, status_code=204)


def list_clusters(
    session: Session, *, limit: int, cursor: str | None
) -> tuple[list[Cluster], str | None]:
    return keyset_page(session, select(Cluster), Cluster.name, limit=limit, cursor=cursor)


class Probes:
    """A cluster is probed (with its credentials) at most every ``every`` seconds per API
    process: however often a caller asks, the service does not become a way to send
    requests out, nor to keep database slots busy."""

    def __init__(self, every: float = 30.0) -> None:
        self.every = every
        self._last: dict[tuple[int, str], tuple[float, bool, str | None]] = {}
        self._lock = threading.Lock()

    def probe(self, cluster: Cluster) -> tuple[bool, str | None]:
        key = (cluster.id, cluster.url)
        with self._lock:
            cached = self._last.get(key)
            if cached is not None and time.monotonic() - cached[0] < self.every:
                return cached[1], cached[2]
        error: str | None = None
        try:
            reachable = backend_for(cluster, timeout=2.0).ready()
            if not reachable:
                error = "the backend answered but says it is not ready"
        except BackendError as exc:
            reachable, error = False, str(exc)
        except Exception as exc:  # a probe must never fail the GET
            reachable, error = False, f"{type(exc).__name__}: {exc}"
        with self._lock:
            self._last[key] = (time.monotonic(), reachable, error)
        return reachable, error


def cluster_response(cluster: Cluster, *, probes: Probes | None = None) -> ClusterResponse:
    """The cluster as stored; with ``probes``, whether it answers (probed or recent)."""
    reachable: bool | None = None
    error: str | None = None
    if probes is not None:
        reachable, error = probes.probe(cluster)
    return ClusterResponse(
        name=cluster.name,
        kind=cluster.kind,
        url=cluster.url,
        master_url=cluster.master_url,
        ui_url=cluster.ui_url,
        description=cluster.description,
        has_credentials=bool(cluster.credentials),
        reachable=reachable,
        reachability_error=error,
        created_at=cluster.created_at,
    )
