"""The API in process (``client``, its ``settings``, a ``cluster``, tokens of each scope) and
the bodies tests send it. A fixture plugin of ``tests/conftest.py``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.api.main import create_app
from app.auth.service import Scope, create_run_token, create_token
from app.core.config import Settings
from app.core.db import make_sessionmaker, transaction
from tests.conftest import ADMIN_TOKEN


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        database_url=None,
        admin_token=ADMIN_TOKEN,  # type: ignore[arg-type]
        data_dir=tmp_path / "data",
        checkpoint_root=tmp_path / "checkpoints",
        eventlog_roots=str(tmp_path),  # the tests' event logs live beside the data dir
        log_json=False,
    )


@pytest.fixture
def client(db: Engine, settings: Settings) -> Iterator[TestClient]:
    root = settings.resolved_checkpoint_root
    if isinstance(root, Path):  # an object store makes its prefixes as it writes
        root.mkdir(parents=True, exist_ok=True)
    app = create_app(settings, engine=db)
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as c:
        yield c


@pytest.fixture
def token_for(db: Engine) -> Callable[[str], str]:
    """Mint a real stored token with the given scope."""

    def make(scope: str) -> str:
        with transaction(make_sessionmaker(db)) as session:
            _, secret = create_token(session, name=f"test-{scope}", scope=Scope(scope))
        return secret

    return make


@pytest.fixture
def cluster(client: TestClient) -> str:
    r = client.post(
        "/api/v1/clusters",
        json={"name": "local", "kind": "livy", "url": "http://127.0.0.1:9"},
    )
    assert r.status_code == 201, r.text
    return "local"


def version_body(cluster: str = "local", **over: object) -> dict[str, object]:
    body: dict[str, object] = {
        "app": {"file": "/opt/pipelines/windowed_counts.py"},
        "cluster": cluster,
        "conf": {"spark.sql.shuffle.partitions": 2},
        "queries": [
            {
                "sources": [{"name": "events", "kind": "eventlog", "options": {"stream": "s"}}],
                "stateful_operators": [{"kind": "tumbling_window"}],
                "output_mode": "append",
                "trigger": "15 seconds",
            }
        ],
    }
    body.update(over)
    return body


def make_current_run(db: Engine, job: str, state: str = "running") -> tuple[int, str]:
    """A run of ``job``'s first version in ``state``, made its current run, with a run-scoped
    token: (run id, token)."""
    from app.jobs.models import Job
    from app.runs.models import Run

    with transaction(make_sessionmaker(db)) as session:
        row = session.query(Job).filter_by(name=job).one()
        run = Run(
            job_id=row.id,
            version_id=row.versions[0].id,
            state=state,
            attempt=0,
            failures=0,
            created_by="t",
            progress={},
        )
        session.add(run)
        session.flush()
        row.current_run_id = run.id
        return run.id, create_run_token(session, run.id, "r")
