"""A small, known world for the fuzzers to find: one cluster, one job with a version over a
real event log, one run, one operation. Fuzzed requests that name them reach the handlers'
deep paths instead of stopping at 404."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

from sqlalchemy import Engine

from app.core.db import make_sessionmaker, transaction
from tests.support.database import empty_every_table
from tidegate_runtime.sources.eventlog import EventLog, NewRecord

SEED_JOB = "fuzz-job"
SEED_CLUSTER = "local"
T0 = 1_767_225_600_000


def reset_and_seed(engine: Engine, tmp: Path) -> None:
    """Empty every table, then seed through the models (no worker runs: nothing executes)."""
    from app.clusters.models import Cluster
    from app.jobs.models import Job, JobVersion
    from app.operations.models import Operation
    from app.runs.models import Run

    empty_every_table(engine)
    root = tmp / "log"
    stream = EventLog(root).create_stream("s", 2)
    for p in range(2):
        stream.append(p, [NewRecord(T0 + i * 1000, "k", "1") for i in range(20)])
    source = {"name": "events", "kind": "eventlog", "options": {"root": str(root), "stream": "s"}}
    with transaction(make_sessionmaker(engine)) as session:
        cluster = Cluster(name=SEED_CLUSTER, kind="livy", url="http://127.0.0.1:9")
        job = Job(name=SEED_JOB, restart_policy={}, created_by="seed")
        session.add_all([cluster, job])
        session.flush()
        version = JobVersion(
            job_id=job.id,
            number=1,
            cluster_id=cluster.id,
            app={"file": "/opt/app.py"},
            conf={},
            queries=[
                {
                    "name": "q",
                    "name_derived": False,
                    "sources": [source],
                    "stateful_operators": [],
                    "output_mode": "append",
                    "trigger": None,
                    "partitioned_on": [],
                    "checkpoint_location": None,
                }
            ],
            created_by="seed",
        )
        session.add(version)
        session.flush()
        run = Run(
            job_id=job.id,
            version_id=version.id,
            state="running",
            attempt=0,
            failures=0,
            created_by="seed",
            progress={},
        )
        session.add(run)
        session.flush()
        job.current_run_id, job.state = run.id, "running"
        session.add(
            Operation(
                job_id=job.id,
                kind="submit",
                state="succeeded",
                params={"version": 1},
                request_hash="0" * 64,
                created_by="seed",
                run_id=run.id,
                steps=[],
            )
        )


class _Unreachable:
    def ready(self) -> bool:
        return False


@contextmanager
def no_backend_calls() -> Iterator[None]:
    """Fuzzed clusters carry arbitrary URLs; reachability probes must never leave the box."""
    with mock.patch("app.clusters.service.backend_for", lambda *a, **k: _Unreachable()):
        yield
