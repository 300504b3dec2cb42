"""The runner's HTTP API: the subset of Livy's batch API that tidegate (and Livy clients) use.

Differences from Livy: DELETE keeps the batch (state ``killed``, or its final state if it had
already ended) instead of forgetting it, and listed batches carry an empty ``log``.

A batch runs code as the runner's user, so only tidegate may ask for one: every request must
carry ``Authorization: Bearer <runner token>`` (the ``local`` cluster's credentials), name a
loopback ``Host`` (a web page that rebinds its DNS name to 127.0.0.1 still sends its own
name), and a write must be ``application/json`` (which a cross-site form cannot send without
a CORS preflight this server never answers).
"""

from __future__ import annotations

import hmac
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from app.runner.batches import Batch, BatchError, BatchManager, SubmitRequest


class BatchBody(BaseModel):
    """``POST /batches``, as Livy names the fields."""

    model_config = ConfigDict(extra="forbid")

    file: str = Field(min_length=1, description="Absolute path or URL of the .py file or jar.")
    name: str | None = Field(default=None, min_length=1)
    className: str | None = None
    args: list[str] = []
    pyFiles: list[str] = []
    jars: list[str] = []
    files: list[str] = []
    archives: list[str] = []
    conf: dict[str, str] = {}
    driverMemory: str | None = None
    driverCores: int | None = Field(default=None, gt=0)
    executorMemory: str | None = None
    executorCores: int | None = Field(default=None, gt=0)
    numExecutors: int | None = Field(default=None, gt=0)


class AppInfo(BaseModel):
    driverLogUrl: str | None = None
    sparkUiUrl: str | None = None


class BatchResponse(BaseModel):
    id: int
    name: str | None
    owner: str | None = None
    proxyUser: str | None = None
    state: str
    appId: str | None
    appInfo: AppInfo = AppInfo()
    log: list[str] = []


class BatchList(BaseModel):
    from_: int = Field(serialization_alias="from")
    total: int
    sessions: list[BatchResponse]


class BatchStateResponse(BaseModel):
    id: int
    state: str


class BatchLog(BaseModel):
    id: int
    from_: int = Field(serialization_alias="from")
    total: int
    log: list[str]


def _response(batch: Batch, log: list[str] | None = None) -> BatchResponse:
    return BatchResponse(
        id=batch.id,
        name=batch.name,
        state=batch.state,
        appId=batch.app_id,
        log=log if log is not None else [],
    )


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def _host_name(host_header: str) -> str:
    """``[::1]:8998`` → ``::1``; ``localhost:8998`` → ``localhost``."""
    if host_header.startswith("["):
        return host_header[1:].partition("]")[0]
    return host_header.rpartition(":")[0] if host_header.count(":") == 1 else host_header


def create_app(
    state_dir: Path,
    master: str = "local[2]",
    python: str = sys.executable,
    *,
    token: str,
    spark_submit: str | None = None,
    kill_grace: float = 10.0,
    allowed_hosts: frozenset[str] = LOOPBACK_HOSTS,
) -> FastAPI:
    """A runner keeping its batches in ``state_dir``; a new app on the same dir sees them all.
    Clients must send ``Authorization: Bearer <token>`` and a Host among ``allowed_hosts``."""
    if not token:
        raise ValueError("the runner needs a token: batches run code as this user")
    manager = BatchManager(
        state_dir, master, python, spark_submit=spark_submit, kill_grace=kill_grace
    )
    app = FastAPI(
        title="tidegate runner",
        description="Livy-compatible local batch runner.",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.manager = manager
    expected = f"Bearer {token}".encode()
    hosts = frozenset(h.lower() for h in allowed_hosts)

    @app.middleware("http")
    async def _guard(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        host = _host_name(request.headers.get("host", "")).lower()
        if host not in hosts:
            return JSONResponse(
                {"msg": f"Host '{host}' is not served here; use http://127.0.0.1:<port>."},
                status_code=421,
            )
        given = request.headers.get("authorization", "").encode()
        if not hmac.compare_digest(given, expected):
            return JSONResponse(
                {"msg": "Send Authorization: Bearer <runner token> (TIDEGATE_RUNNER_TOKEN)."},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        if request.method not in ("GET", "HEAD", "OPTIONS", "DELETE"):
            ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype != "application/json":
                return JSONResponse(
                    {"msg": "Send the body as Content-Type: application/json."},
                    status_code=415,
                )
        return await call_next(request)

    @app.exception_handler(BatchError)
    async def _batch_error(request: Request, exc: BatchError) -> JSONResponse:
        return JSONResponse({"msg": str(exc)}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        # Livy answers 400 {"msg": …} to a bad request, not FastAPI's 422.
        errors = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'body'}: {e.get('msg')}"
            for e in exc.errors()
        )
        return JSONResponse({"msg": f"Invalid request: {errors}"}, status_code=400)

    @app.post("/batches", status_code=201, response_model=BatchResponse)
    def create_batch(body: BatchBody) -> BatchResponse:
        batch = manager.submit(
            SubmitRequest(
                file=body.file,
                name=body.name,
                class_name=body.className,
                args=body.args,
                py_files=body.pyFiles,
                jars=body.jars,
                files=body.files,
                archives=body.archives,
                conf=body.conf,
                driver_memory=body.driverMemory,
                driver_cores=body.driverCores,
                executor_memory=body.executorMemory,
                executor_cores=body.executorCores,
                num_executors=body.numExecutors,
            )
        )
        return _response(batch)

    @app.get("/batches", response_model=BatchList, response_model_by_alias=True)
    def list_batches(
        from_: Annotated[int, Query(alias="from", ge=0)] = 0,
        size: Annotated[int, Query(ge=0)] = 100,
    ) -> Any:
        total, batches = manager.page(from_, size)
        return BatchList(from_=from_, total=total, sessions=[_response(b) for b in batches])

    @app.get("/batches/{batch_id}", response_model=BatchResponse)
    def get_batch(batch_id: int) -> BatchResponse:
        batch = manager.get(batch_id)
        return _response(batch, manager.tail(batch_id, 10))

    @app.get("/batches/{batch_id}/state", response_model=BatchStateResponse)
    def get_state(batch_id: int) -> BatchStateResponse:
        batch = manager.get(batch_id)
        return BatchStateResponse(id=batch.id, state=batch.state)

    @app.get("/batches/{batch_id}/log", response_model=BatchLog, response_model_by_alias=True)
    def get_log(
        batch_id: int,
        from_: Annotated[int | None, Query(alias="from")] = None,
        size: Annotated[int, Query()] = 100,
    ) -> Any:
        start, total, lines = manager.log(batch_id, from_, size)
        return BatchLog(id=batch_id, from_=start, total=total, log=lines)

    @app.delete("/batches/{batch_id}")
    def delete_batch(batch_id: int) -> dict[str, str]:
        manager.kill(batch_id)
        return {"msg": "deleted"}

    return app
