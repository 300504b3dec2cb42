"""What the benchmarks share: a scratch database, servers as subprocesses on loopback, a
bounded load generator, robust statistics and the record of each run.

Every figure is reported next to a baseline measured in the same run, as medians over
rounds, because this is a small shared machine: absolute numbers move, ratios much less.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
ADMIN_TOKEN = "tg_bench_admin_token_" + uuid.uuid4().hex
sys.path.insert(0, str(ROOT))


# ---- statistics ---------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def median(values: list[float]) -> float:
    return statistics.median(values)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def ratio(value: float, baseline: float) -> str:
    return f"{value / baseline:.2f}x" if baseline > 0 else "n/a"


# ---- machine and results --------------------------------------------------------------------


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = int(line.split()[1]) // 1024
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "memory_mib": memory,
        "cpu": cpu,
        "python": platform.python_version(),
        "kernel": platform.release(),
        "load_avg_at_start": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


def results_dir() -> Path:
    """bench/results, or $TIDEGATE_BENCH_RESULTS (the smoke tests write to a tmp dir)."""
    explicit = os.environ.get("TIDEGATE_BENCH_RESULTS")
    return Path(explicit) if explicit else RESULTS


def save(name: str, figures: dict[str, Any]) -> Path:
    """Keep this run's figures (bench/results/<name>.json, or under $TIDEGATE_BENCH_RESULTS)
    for RESULTS.md."""
    directory = results_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    path.write_text(
        json.dumps(
            {
                "bench": name,
                "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "machine": machine(),
                **figures,
            },
            indent=2,
        )
        + "\n"
    )
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    print(f"\nfigures written to {shown}")
    return path


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


# ---- a scratch database ---------------------------------------------------------------------


_server: str | None = None


def server_url() -> str:
    """The benchmarks' PostgreSQL server (its ``postgres`` database):
    TIDEGATE_BENCH_DATABASE_URL's when set (the test suite hands its own server over), else an
    embedded one under .tidegate/bench-pg, started on first use and stopped when the script
    exits."""
    global _server
    if _server is None:
        explicit = os.environ.get("TIDEGATE_BENCH_DATABASE_URL")
        if explicit:
            _server = on_database(explicit, "postgres")
        else:
            from app.core.embedded import embedded_database_url

            embedded = embedded_database_url(ROOT / ".tidegate" / "bench-pg")
            _server = on_database(embedded, "postgres")
    return _server


def on_database(url: str, name: str) -> str:
    """``url`` with its database replaced by ``name`` (host, port, socket dir, query kept)."""
    from sqlalchemy import make_url

    return make_url(url).set(database=name).render_as_string(hide_password=False)


def drop_database(server: str, name: str) -> None:
    """Database ``name`` on ``server`` gone, even with connections still open to it."""
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
        )


@contextmanager
def scratch_database(prefix: str) -> Iterator[str]:
    """A new database on the benchmark server, migrated to head, dropped afterwards."""
    from app.core import migrate

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    server = server_url()
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    url = on_database(server, name)
    try:
        migrate.upgrade(url)
        yield url
    finally:
        drop_database(server, name)


# ---- servers ----------------------------------------------------------------------------------


def free_port() -> int:
    from app.devtools.spark_local import find_free_port

    return find_free_port()


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@contextmanager
def serve(
    args: list[str],
    env: dict[str, str],
    log: Path,
    health: str | None,
    headers: dict[str, str] | None = None,
) -> Iterator[Server]:
    """A server subprocess on loopback, stopped on exit; ``health`` is polled (with
    ``headers``) until 200 (None: a process without HTTP, e.g. the worker, ready once its log
    says "started")."""
    given = env.get("TIDEGATE_PORT")
    port = given or str(free_port())
    env = {**os.environ, **env, "TIDEGATE_PORT": port, "BENCH_PORT": port}
    proc = subprocess.Popen(
        [sys.executable, *args], env=env, cwd=ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT
    )
    server = Server(proc, f"http://127.0.0.1:{port}", log)
    tries = 1
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                said = log.read_text(errors="replace")
                if not given and "address already in use" in said and tries < 3:
                    # The free port we picked was taken before the server bound it (another
                    # process's outgoing connection, a server started beside it): pick again.
                    tries += 1
                    port = str(free_port())
                    env = {**env, "TIDEGATE_PORT": port, "BENCH_PORT": port}
                    proc = subprocess.Popen(
                        [sys.executable, *args],
                        env=env,
                        cwd=ROOT,
                        stdout=log.open("ab"),
                        stderr=subprocess.STDOUT,
                    )
                    server = Server(proc, f"http://127.0.0.1:{port}", log)
                    continue
                raise RuntimeError(f"{args} exited:\n{said[-3000:]}")
            if health is None:
                if "started" in log.read_text(errors="replace"):
                    break
            else:
                try:
                    answer = httpx.get(server.url + health, headers=headers, timeout=1)
                    if answer.status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{args} did not come up:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield server
    finally:
        server.stop()


def tidegate_env(database_url: str, tmp: Path, **extra: str) -> dict[str, str]:
    """The service's production defaults (JSON logs at INFO, pool of 10), on loopback."""
    return {
        "TIDEGATE_DATABASE_URL": database_url,
        "TIDEGATE_ADMIN_TOKEN": ADMIN_TOKEN,
        "TIDEGATE_DATA_DIR": str(tmp / "data"),
        "TIDEGATE_CHECKPOINT_ROOT": str(tmp / "checkpoints"),
        "TIDEGATE_EVENTLOG_ROOTS": str(tmp),  # the benchmarks' event logs are in tmp
        "TIDEGATE_LOG_JSON": "true",
        "TIDEGATE_LOG_LEVEL": "INFO",
        **extra,
    }


def api_client(url: str, **kw: Any) -> httpx.Client:
    return httpx.Client(
        base_url=url + "/api/v1",
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        timeout=60,
        **kw,
    )


# ---- load ---------------------------------------------------------------------------------------


@dataclass
class Load:
    """One load level: requests/s and latency percentiles; ``errors`` counts non-2xx."""

    concurrency: int
    requests: int
    seconds: float
    latencies: list[float] = field(repr=False)
    errors: int

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    @property
    def p50(self) -> float:
        return percentile(self.latencies, 50)

    @property
    def p99(self) -> float:
        return percentile(self.latencies, 99)


Request = Callable[[httpx.AsyncClient, int], Awaitable[httpx.Response]]


def run_load(
    base_url: str,
    request: Request,
    *,
    concurrency: int,
    max_requests: int,
    max_seconds: float,
    headers: dict[str, str] | None = None,
) -> Load:
    """``concurrency`` clients send ``request`` back to back until ``max_requests`` were sent
    or ``max_seconds`` passed (each client one at least): bounded in count and in time,
    loopback only."""
    if not base_url.startswith("http://127.0.0.1:"):
        raise ValueError("load goes to loopback only")

    async def main() -> Load:
        latencies: list[float] = []
        errors = 0
        sent = 0
        deadline = time.monotonic() + max_seconds
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(
            base_url=base_url, headers=headers, timeout=60, limits=limits
        ) as client:

            async def worker() -> None:
                nonlocal errors, sent
                first = True  # each client sends one at least: a loaded machine may start
                # the loop after the deadline, and a round of no requests has no figures
                while sent < max_requests and (first or time.monotonic() < deadline):
                    first = False
                    index = sent
                    sent += 1
                    t0 = time.perf_counter()
                    response = await request(client, index)
                    latencies.append(time.perf_counter() - t0)
                    if response.status_code >= 300:
                        errors += 1

            start = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            elapsed = time.perf_counter() - start
        return Load(concurrency, len(latencies), elapsed, latencies, errors)

    return asyncio.run(main())
