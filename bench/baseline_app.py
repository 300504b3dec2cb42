"""The API benchmark's baseline: bare FastAPI routes that each do one psycopg query on the
same database, served by uvicorn exactly as `tidegate api` serves the real app. What is
left of the gap is tidegate's own work (auth, ORM, validation, audit, logging).

Run by bench/api.py: ``python bench/baseline_app.py`` with TIDEGATE_DATABASE_URL and
BENCH_PORT set.
"""

from __future__ import annotations

import os
import queue
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import uvicorn
from fastapi import FastAPI, HTTPException
from psycopg.rows import dict_row
from pydantic import BaseModel


class Pool:
    """A fixed set of connections (the real app's pool is 10 as well)."""

    def __init__(self, url: str, size: int = 10) -> None:
        self.free: queue.Queue[psycopg.Connection[dict[str, Any]]] = queue.Queue()
        for _ in range(size):
            self.free.put(psycopg.connect(url, autocommit=True, row_factory=dict_row))

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[dict[str, Any]]]:
        conn = self.free.get(timeout=5)
        try:
            yield conn
        finally:
            self.free.put(conn)


class Startpoint(BaseModel):
    source: str
    partition: int | None = None
    type: str
    value: int | None = None


class Put(BaseModel):
    startpoints: list[Startpoint]


# What a job's response holds, as tidegate reads it (the same columns and the latest-version
# subquery), so that a ratio compares everything but the query.
JOB = (
    "select name, description, state, restart_policy, prewarm, hot_spare, "
    "(select max(number) from job_versions v where v.job_id = jobs.id) as latest_version, "
    "current_run_id, next_restart_at, revision, created_by, created_at, updated_at from jobs"
)


RUN = (
    "select r.id, j.name as job, v.number as version, c.name as cluster, r.state, "
    "r.stop_reason, r.attempt, r.failures, r.backend_id, r.attempt_spare_seq, r.observed_state, "
    "r.observed_at, r.last_error, r.next_restart_at, r.running_since, r.progress, r.drain, "
    "r.standby_ready_at, r.go_at, r.spare_attempt, r.spare_backend_id, r.spare_ready_at, "
    "r.spare_error, r.spare_retry_at, r.created_by, r.created_at, r.ended_at "
    "from runs r join jobs j on j.id = r.job_id join job_versions v on v.id = r.version_id "
    "join clusters c on c.id = v.cluster_id"
)


def create_app(url: str) -> FastAPI:
    app = FastAPI()
    pool = Pool(url.replace("postgresql+psycopg://", "postgresql://"))

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/baseline/jobs/{name}")
    def get_job(name: str) -> dict[str, Any]:
        with pool.connection() as conn:
            row = conn.execute(JOB + " where name = %s", (name,)).fetchone()
        if row is None:
            raise HTTPException(404)
        return row

    @app.get("/baseline/jobs")
    def list_jobs(limit: int = 50, after: str = "") -> dict[str, Any]:
        with pool.connection() as conn:
            rows = conn.execute(
                JOB + " where name > %s order by name limit %s", (after, limit)
            ).fetchall()
        return {"items": rows}

    @app.get("/baseline/runs/{run_id}")
    def get_run(run_id: int) -> dict[str, Any]:
        """A run with its job's, version's and cluster's names, and its last 50 transitions:
        what tidegate's GET /runs/{id} reads, in two queries as it does."""
        with pool.connection() as conn:
            run = conn.execute(RUN + " where r.id = %s", (run_id,)).fetchone()
            if run is None:
                raise HTTPException(404)
            run["transitions"] = conn.execute(
                "select at, from_state, to_state, reason from run_transitions "
                "where run_id = %s order by id desc limit 50",
                (run_id,),
            ).fetchall()
        return run

    @app.get("/baseline/snapshots")
    def list_snapshots(limit: int = 50, before: int | None = None) -> dict[str, Any]:
        """Newest first, keyset on the id, each with its job's name: one query."""
        with pool.connection() as conn:
            rows = conn.execute(
                "select j.name as job, s.name, s.state, s.created_at, s.completed_at, "
                "s.size_bytes, s.bytes_written, s.file_count, s.run_id, "
                "s.version_number as version, s.stop "
                "from snapshots s join jobs j on j.id = s.job_id "
                "where s.id < %s order by s.id desc limit %s",
                (before if before is not None else 2**62, limit),
            ).fetchall()
        return {"items": rows}

    @app.put("/baseline/jobs/{name}/startpoints")
    def put_startpoints(name: str, body: Put) -> dict[str, int]:
        with pool.connection() as conn:
            for sp in body.startpoints:
                conn.execute(
                    "insert into startpoints (job_id, source, partition, type, value, state, "
                    "created_by, created_at, updated_at) "
                    "select id, %s, %s, %s, %s, 'pending', 'baseline', now(), now() "
                    "from jobs where name = %s "
                    "on conflict (job_id, source, coalesce(partition, -1)) do update "
                    "set type = excluded.type, value = excluded.value, updated_at = now()",
                    (sp.source, sp.partition, sp.type, sp.value, name),
                )
        return {"upserted": len(body.startpoints)}

    return app


if __name__ == "__main__":
    uvicorn.run(
        create_app(os.environ["TIDEGATE_DATABASE_URL"]),
        host="127.0.0.1",
        port=int(os.environ["BENCH_PORT"]),
        log_config=None,
        timeout_graceful_shutdown=10,
    )
