"""The CLI against a real running service: the API under uvicorn in a thread, on the session's
real PostgreSQL database (tests/conftest.py), emptied before each test. No worker and no
Spark: operations stay ``pending`` unless a test moves them on in the database."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
import typer.testing
import yaml
from sqlalchemy import Engine
from typer.testing import CliRunner, Result

from app.api.main import create_app
from app.auth.service import Scope, create_token
from app.cli import cli as root_cli
from app.core.config import Settings
from app.core.db import make_sessionmaker, transaction
from app.jobs.models import Job
from app.runs.models import Run
from tests.conftest import ADMIN_TOKEN
from tests.support.waiting import served


@dataclass
class Live:
    url: str
    engine: Engine
    checkpoint_root: Path

    def http(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url + "/api/v1",
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
            timeout=10,
        )


@pytest.fixture(scope="session")
def live(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """One server for the whole session (starting uvicorn per test would dominate the time)."""
    tmp = tmp_path_factory.mktemp("cli-live")
    settings = Settings(
        database_url=None,
        admin_token=ADMIN_TOKEN,  # type: ignore[arg-type]
        data_dir=tmp / "data",
        checkpoint_root=tmp / "checkpoints",
        eventlog_roots=tempfile.gettempdir(),  # each test's event log is in its own tmp
        log_json=False,
    )
    settings.resolved_checkpoint_root.mkdir(parents=True, exist_ok=True)
    # lifespan off: the session's engine outlives the app.
    with served(create_app(settings, engine), lifespan="off") as url:
        yield Live(url, engine, settings.resolved_checkpoint_root)


@dataclass
class Cli:
    """``tidegate …`` in-process, as a user would type it, with stdout and stderr apart."""

    runner: CliRunner

    def __call__(self, *args: str, input: str | None = None) -> Result:
        return self.runner.invoke(root_cli, list(args), input=input)

    def ok(self, *args: str) -> Result:
        result = self(*args)
        assert result.exit_code == 0, (args, result.exit_code, result.output)
        assert "Traceback" not in result.output
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "-o", "json").stdout)

    def yaml(self, *args: str) -> Any:
        return yaml.safe_load(self.ok(*args, "-o", "yaml").stdout)

    def fails(self, code: int, *args: str) -> str:
        """Run, expect exit ``code`` and one ``error:`` line, the last; return that line.
        (With --wait, progress lines come before it on stderr.)"""
        result = self(*args)
        assert result.exit_code == code, (args, result.exit_code, result.output)
        assert "Traceback" not in result.output
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("error: ")]
        assert len(errors) == 1 and lines[-1] == errors[0], result.stderr
        return errors[0]


@pytest.fixture
def cli_env(live: Live, db: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Environment of a user pointed at the live server, with a settings file of its own."""
    for name in ("TIDEGATE_OUTPUT", "TIDEGATE_TIMEOUT", "TIDEGATE_DEBUG", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "config.toml"
    monkeypatch.setenv("TIDEGATE_URL", live.url)
    monkeypatch.setenv("TIDEGATE_TOKEN", ADMIN_TOKEN)
    monkeypatch.setenv("TIDEGATE_CONFIG", str(config))
    monkeypatch.setenv("TIDEGATE_POLL_INTERVAL", "0.05")
    return config


@pytest.fixture
def token_for(live: Live, db: Engine) -> Callable[[str], str]:
    """Mint a real stored token with the given scope."""

    def make(scope: str) -> str:
        with transaction(make_sessionmaker(live.engine)) as session:
            _, secret = create_token(session, name=f"test-{scope}", scope=Scope(scope))
        return secret

    return make


@pytest.fixture(scope="session")
def _command_tree() -> Any:
    """typer rebuilds the whole click tree on every invoke (~60 ms here); build it once."""
    return typer.main.get_command(root_cli)


@pytest.fixture
def tg(cli_env: Path, _command_tree: Any, monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.setattr(typer.testing, "_get_command", lambda app: _command_tree)
    return Cli(CliRunner())


@pytest.fixture
def version_file(tmp_path: Path) -> Path:
    """The example pipeline's version, as a user would write it (YAML)."""
    path = tmp_path / "version.yaml"
    path.write_text(
        """\
app:
  file: /opt/tidegate/pipelines/windowed_counts.py
  args: [--root, /data/log, --stream, clicks, --output, /data/out]
cluster: local
conf:
  spark.sql.shuffle.partitions: 2
queries:
  - name: windowed_counts
    sources:
      - {name: clicks, kind: eventlog, options: {root: /data/log, stream: clicks}}
    stateful_operators: [{kind: tumbling_window}]
    output_mode: append
    trigger: 15 SECONDS
"""
    )
    return path


@pytest.fixture
def job(tg: Cli, version_file: Path) -> str:
    """A job with one version on a registered cluster, never run."""
    tg.ok("clusters", "create", "local", "--kind", "livy", "--cluster-url", "http://127.0.0.1:9")
    tg.ok("jobs", "create", "clicks", "--description", "per-key counts")
    tg.ok("versions", "create", "clicks", "-f", str(version_file))
    return "clicks"


@pytest.fixture
def running(live: Live) -> Callable[..., int]:
    """Make a job look running (a run in state 'running'), as a worker would have."""

    def make(job: str = "clicks") -> int:
        with transaction(make_sessionmaker(live.engine)) as session:
            row = session.query(Job).filter_by(name=job).one()
            run = Run(
                job_id=row.id,
                version_id=row.versions[0].id,
                state="running",
                attempt=0,
                failures=0,
                backend_id="batch-1",
                created_by="test",
                progress={"windowed_counts": {"batch_id": 4, "num_input_rows": 10}},
            )
            session.add(run)
            session.flush()
            row.current_run_id, row.state = run.id, "running"
            return int(run.id)

    return make
