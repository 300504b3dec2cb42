"""Liveness, readiness and Prometheus metrics: the only routes that need no token (but /metrics)."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel

from app.auth.deps import Reader
from app.core.errors import problem
from app.core.migrate import current_revision
from app.metrics import exposition

log = logging.getLogger(__name__)

router = APIRouter(tags=["service"])


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str
    database: str
    migration: str | None
    expected_migration: str | None


@router.get("/healthz", response_model=Health, operation_id="getHealth", name="service.health")
def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Readiness,
    operation_id="getReadiness",
    name="service.ready",
    responses={503: {"description": "Not ready: database unreachable or migrations not at head."}},
)
def readyz(request: Request) -> Response:
    # Unauthenticated: the answer says what is wrong, never the driver's error or the
    # revisions (host names, ports, user names, versions); the log has the detail.
    head = request.app.state.migration_head
    try:
        current = current_revision(request.app.state.engine)
    except Exception as exc:
        log.warning("readiness: the database is unreachable: %s", str(exc).splitlines()[0])
        return problem(
            503, "Not ready", "The database is unreachable.", headers={"Retry-After": "5"}
        )
    if current != head:
        log.warning("readiness: the schema is at %s, expected %s", current or "nothing", head)
        return problem(
            503,
            "Not ready",
            "The database schema is not at head: run 'tidegate migrate'.",
            headers={"Retry-After": "5"},
        )
    return JSONResponse(
        Readiness(
            status="ready", database="ok", migration=current, expected_migration=head
        ).model_dump()
    )


@router.get(
    "/metrics",
    operation_id="getMetrics",
    name="service.metrics",
    responses={
        200: {
            "content": {"text/plain": {}},
            "description": "Prometheus text format: HTTP metrics, and the jobs', runs', "
            "queries', operations' and workers' figures read from the store at scrape time "
            "(see docs/observability.md).",
        }
    },
)
def metrics(request: Request, _: Reader) -> Response:
    return Response(exposition(request.app.state.metrics_registry), media_type=CONTENT_TYPE_LATEST)
