"""The API application factory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
from fastapi import APIRouter, FastAPI
from sqlalchemy import Engine

from app.api import health
from app.api.error_handlers import document_problems, install_error_handlers
from app.api.middleware import RequestMiddleware
from app.audit.routes import router as audit_router
from app.audit.service import Repeats
from app.channel.routes import router as channel_router
from app.clusters.routes import router as clusters_router
from app.clusters.service import Probes
from app.core import checkpoint_store
from app.core.config import Settings, get_settings
from app.core.db import make_engine, make_sessionmaker
from app.core.migrate import head_revision
from app.core.notify import Notifier
from app.jobs.routes import router as jobs_router
from app.metrics import store_registry
from app.operations.routes import router as operations_router
from app.operations.startpoints_routes import router as set_startpoints_router
from app.resume_points.routes import router as resume_points_router
from app.runs.routes import router as runs_router
from app.runs.service import RUN_CHANNEL, STANDBY_CHANNEL
from app.snapshots.routes import router as snapshots_router
from app.startpoints.routes import router as startpoints_router
from app.tokens.routes import router as tokens_router
from app.ui import routes as ui

API_PREFIX = "/api/v1"
MAX_BODY_BYTES = 8 * 1024 * 1024

DESCRIPTION = """\
tidegate changes long-running Spark Structured Streaming jobs without losing data or state:
startpoints, snapshots, resume points, drain and supervised restarts.

Every call but `/healthz` and `/readyz` needs `Authorization: Bearer <token>`. Errors are
RFC 9457 `application/problem+json`.
"""


def create_app(settings: Settings | None = None, engine: Engine | None = None) -> FastAPI:
    settings = settings or get_settings()
    checkpoint_store.register(settings)  # checkpoints in object storage: the API reads them too
    if engine is None:
        if not settings.database_url:
            raise RuntimeError(
                "TIDEGATE_DATABASE_URL is not set; 'tidegate api' or 'make run' start an "
                "embedded PostgreSQL for you."
            )
        engine = make_engine(
            settings.database_url,
            pool_size=settings.db_pool_size,
            statement_timeout_ms=settings.db_statement_timeout_ms,
        )

    notifier = Notifier(
        engine, (STANDBY_CHANNEL, RUN_CHANNEL), max_waiters=settings.max_waiting_drivers
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.api_threads
        yield
        notifier.close()
        engine.dispose()

    app = FastAPI(
        title="tidegate",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        # Every status a client can meet is documented (problem+json): the fuzz suite holds
        # the app to this list.
        responses={
            400: {"description": "A malformed request."},
            401: {"description": "Missing or invalid bearer token."},
            403: {"description": "The token's scope does not allow this call."},
            404: {"description": "No such resource (job, run, operation, …)."},
            409: {"description": "The request conflicts with the resource's current state."},
            413: {"description": "The request body is too large."},
            422: {"description": "The request is invalid; see 'errors'."},
            503: {"description": "The metadata store is unreachable; retry."},
        },
    )
    default_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = document_problems(default_openapi())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = make_sessionmaker(engine)
    # Reads need no transaction: without BEGIN and COMMIT a GET costs two round trips fewer.
    app.state.read_sessionmaker = make_sessionmaker(
        engine.execution_options(isolation_level="AUTOCOMMIT")
    )
    app.state.notifier = notifier
    app.state.refusals = Repeats()  # refusals repeated within a minute: one audit row
    app.state.probes = Probes()  # a cluster probed at most every 30 s
    app.state.metrics_registry = store_registry(app.state.sessionmaker)
    app.state.migration_head = head_revision()
    install_error_handlers(app)
    app.add_middleware(RequestMiddleware, max_body_bytes=MAX_BODY_BYTES)

    app.include_router(health.router)
    api = APIRouter(prefix=API_PREFIX)
    for router in (
        clusters_router,
        jobs_router,
        operations_router,
        runs_router,
        channel_router,
        snapshots_router,
        resume_points_router,
        startpoints_router,
        set_startpoints_router,
        audit_router,
        tokens_router,
    ):
        api.include_router(router)
    app.include_router(api)
    ui.install(app)
    return app
