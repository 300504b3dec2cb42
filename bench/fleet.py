"""A fleet at rest and in use: 1,000 running runs on a Livy-compatible stand-in, 200 of them
with a hot spare waiting, two `tidegate api` processes and two `tidegate worker` processes
(issue 24).

The set-up, on a scratch database:
- ``--jobs`` jobs, each with a RUNNING run whose driver is a batch of bench/fake_livy.py (a
  Livy-compatible server in this process); the runs are written with SQL, filling is not
  what is measured.
- ``--waiting`` of them (spread over the ids) get ``hot_spare: true`` once the fleet runs: the
  real workers submit each spare to the fake (POST /batches); a simulated spare starts for
  every spare batch the fake receives, with the run id, attempt, spare number and run token
  from the submission's conf, and long-polls ``GET /runs/{id}/standby?attempt&wait=25&spare``
  as the runtime does. The same runs' current drivers are simulated too: directives every
  ``--directives-every`` s (the runtime's poll, 1 s), progress every ``--trigger`` s, one
  HTTP connection per request like the runtime's urllib client. The other runs have no
  driver. Each run's drivers go to one of the two API processes, round robin (a load balancer).

Measured, while that runs:
- CPU (user + system, psutil) of the API and worker processes, in cores, over rest windows:
  fleet without spares; with every spare waiting; with the spares waiting and the running
  drivers silent. Also PostgreSQL's backends for this database and this process (drivers).
- PostgreSQL connections in use, sampled every second from pg_stat_activity and attributed
  to each process by its client port, against the configured pools (API: 2 x
  TIDEGATE_DB_POOL_SIZE + its LISTEN connection; worker: 2 x (concurrency + 4) + LISTEN),
  with and without waiting spares.
- Read latency and throughput at concurrency 16 (GET /jobs/{job}, GET /jobs?limit=50) over
  the two API processes, against two bare FastAPI + psycopg apps (bench/baseline_app.py) in
  the same run, rounds interleaved; the load generator runs in a process of its own.
- Death -> go: a running driver's batch turns "dead" in the fake; from then until its
  spare's long-poll answers go (with when the worker saw it dead, from the transitions).
- Operation reaction: POST /jobs/{job}/stop (a run with no driver) -> DELETE /batches/{id}.

    python bench/fleet.py                      # the issue's sizes, ~6 minutes
    python bench/fleet.py --jobs 20 --waiting 5 --rest-seconds 1 --rounds 1 --requests 40 \\
        --seconds 0.5 --deaths 2 --operations 2     # smoke size (tests/bench), seconds

Figures go to bench/results/fleet.json (TIDEGATE_BENCH_RESULTS=dir to write elsewhere).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import re
import secrets
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import psutil
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import seed
from bench.common import (
    ADMIN_TOKEN,
    Server,
    api_client,
    free_port,
    median,
    percentile,
    ratio,
    run_load,
    save,
    scratch_database,
    serve,
    table,
    tidegate_env,
)
from bench.fake_livy import FakeLivy
from bench.metrics import started

# What the worker puts in a spare's submission (app/worker/submission.py::run_spec; Livy
# carries the env as spark.yarn.appMasterEnv.*, app/backends/livy.py::env_conf).
RUN_ID_CONF = "spark.tidegate.run_id"
ATTEMPT_CONF = "spark.tidegate.attempt"
SPARE_CONF = "spark.tidegate.spare"  # tidegate_runtime/standby.py
TOKEN_CONF = "spark.yarn.appMasterEnv.TIDEGATE_RUN_TOKEN"
LONG_POLL = 25  # tidegate_runtime/standby.py::LONG_POLL_SECONDS
API_POOL = 10  # TIDEGATE_DB_POOL_SIZE's default, which the API processes run with
WORKER_CONCURRENCY = 4  # `tidegate worker --concurrency`'s default
READS = ("GET /jobs/{job}", "GET /jobs (page of 50)")

QUERIES = [
    {
        "name": "q",
        "sources": [{"name": "events", "kind": "eventlog", "options": {"stream": "s"}}],
        "stateful_operators": [],
        "output_mode": "append",
        "trigger": "10 SECONDS",
        "partitioned_on": [],
        "checkpoint_location": None,
    }
]


# ---- the stand-in backend -------------------------------------------------------------------


@dataclass
class FleetLivy(FakeLivy):
    """The fake, plus: batches created directly (the seeded drivers), a hook per spare
    submission (a simulated spare starts), and when each batch was first deleted."""

    on_spare: Callable[[int, dict[str, str]], None] | None = None
    deleted_at: dict[int, float] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)

    def add_running(self, name: str) -> int:
        with self.lock:
            batch_id = len(self.batches)
            self.batches[batch_id] = {"id": batch_id, "name": name, "state": "running"}
            return batch_id

    def state_of(self, batch_id: int) -> str:
        with self.lock:
            return str(self.batches[batch_id]["state"])

    def set_state(self, batch_id: int, state: str) -> None:
        with self.lock:
            self.batches[batch_id]["state"] = state

    def record(self, method: str, path: str, name: str | None = None) -> None:
        # Calls are counted, not kept: two workers list 1,000+ batches every second.
        what = re.sub(r"/\d+", "/{id}", urlsplit(path).path)
        with self.lock:
            self.counts[f"{method} {what}"] += 1

    def create(self, payload: dict[str, Any]) -> tuple[int, Any]:
        status, body = super().create(payload)
        conf = payload.get("conf") or {}
        if status == 201 and conf.get(SPARE_CONF) and self.on_spare is not None:
            self.on_spare(int(body["id"]), conf)
        return status, body

    def delete(self, raw: str) -> tuple[int, Any]:
        tail = raw.rsplit("/", 1)[-1]
        if tail.isdigit():
            with self.lock:
                self.deleted_at.setdefault(int(tail), time.monotonic())
        return super().delete(raw)


# ---- the fleet in the database -------------------------------------------------------------


@dataclass
class SeededRun:
    run_id: int
    job: str
    batch_id: int
    token: str | None  # the current driver's run token (simulated runs only)


def spread(n: int, among: int) -> list[int]:
    """``n`` indices spread evenly over ``range(among)``."""
    return sorted({i * among // n for i in range(n)}) if n else []


def seed_fleet(url: str, fake: FleetLivy, jobs: int, waiting: int) -> list[SeededRun]:
    """``jobs`` jobs with a RUNNING run each on a batch of the fake; run tokens for the
    ``waiting`` ones whose drivers are simulated."""
    from app.auth.service import hash_token

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "insert into clusters (name, kind, url, created_at) values ('fake', 'livy', %s, "
            "now()) returning id",
            (fake.url,),
        ).fetchone()
        assert row is not None
        cluster_id = int(row[0])
    seed.jobs(url, 0, jobs, running_every=1)
    with psycopg.connect(url) as conn:
        conn.execute(
            "insert into job_versions (job_id, number, cluster_id, app, conf, queries, "
            "created_by, created_at) select id, 1, %s, '{\"file\": \"/opt/app.py\"}', '{}', "
            "%s, 'bench', now() from jobs",
            (cluster_id, json.dumps(QUERIES)),
        )
        conn.execute(
            "insert into runs (job_id, version_id, state, attempt, failures, progress, "
            "submit_intent_attempt, created_by, created_at, updated_at, running_since) "
            "select j.id, v.id, 'running', 1, 0, '{}', 1, 'bench', now() - interval '1 hour', "
            "now(), now() - interval '10 minutes' "
            "from jobs j join job_versions v on v.job_id = j.id"
        )
        rows = conn.execute(
            "select r.id, j.name from runs r join jobs j on j.id = r.job_id order by j.name"
        ).fetchall()
        simulated = set(spread(waiting, len(rows)))
        runs = []
        for i, (run_id, job) in enumerate(rows):
            batch_id = fake.add_running(f"tidegate-run-{run_id}-a1")
            token = "tg_" + secrets.token_urlsafe(32) if i in simulated else None
            runs.append(SeededRun(int(run_id), str(job), batch_id, token))
        conn.execute(
            "update runs r set backend_id = v.b from (select unnest(%s::bigint[]) as id, "
            "unnest(%s::text[]) as b) v where r.id = v.id",
            ([r.run_id for r in runs], [str(r.batch_id) for r in runs]),
        )
        conn.execute("update jobs j set current_run_id = r.id from runs r where r.job_id = j.id")
        with conn.cursor() as cur:
            cur.executemany(
                "insert into api_tokens (name, scope, token_hash, prefix, run_id, created_at) "
                "values (%s, 'run', %s, %s, %s, now())",
                [
                    (f"run-{r.run_id}", hash_token(r.token), r.token[:10], r.run_id)
                    for r in runs
                    if r.token
                ],
            )
        for t in ("jobs", "job_versions", "runs", "api_tokens"):
            conn.execute(f"analyze {t}")
    return runs


# ---- simulated drivers --------------------------------------------------------------------


@dataclass
class Driver:
    run_id: int
    attempt: int
    batch_id: int
    token: str
    spare: int | None = None  # the spare's number, while it waits


def _progress(batch: int) -> dict[str, Any]:
    """A progress report like the runtime's (tidegate_runtime/channel_client.progress_report)."""
    offsets = {str(p): 100 * batch + p for p in range(4)}
    return {
        "query": "q",
        "batch_id": batch,
        "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "num_input_rows": 1500,
        "sources": [
            {
                "description": "eventlog",
                "start_offset": {str(p): 100 * (batch - 1) + p for p in range(4)},
                "end_offset": offsets,
                "latest_offset": offsets,
                "num_input_rows": 1500,
            }
        ],
        "state_operators": [],
        "durations_ms": {"triggerExecution": 900, "addBatch": 700},
    }


class Drivers:
    """Every simulated driver, on one asyncio loop in a thread of this process."""

    def __init__(
        self, api_urls: list[str], fake: FleetLivy, trigger: float, directives_every: float
    ) -> None:
        self.api_urls = api_urls
        self.fake = fake
        self.trigger = trigger
        self.directives_every = directives_every
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="drivers", daemon=True)
        self.reporting = threading.Event()  # cleared: running drivers stay silent
        self.reporting.set()
        self.cond = threading.Condition()
        self.go_at: dict[int, float] = {}
        self.running: dict[int, Driver] = {}
        self.spares: dict[int, Driver] = {}
        self.polling = 0  # long-polls in flight
        self.counts: Counter[str] = Counter()
        self.tasks: set[asyncio.Task[None]] = set()
        self.clients: list[httpx.AsyncClient] = []
        self.api_of: dict[int, int] = {}
        self.closing = False

    def start(self) -> Drivers:
        self.thread.start()

        async def clients() -> list[httpx.AsyncClient]:
            # Like the runtime's urllib client: one connection per request, none kept.
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
            return [
                httpx.AsyncClient(base_url=u + "/api/v1", timeout=LONG_POLL + 15, limits=limits)
                for u in self.api_urls
            ]

        self.clients = asyncio.run_coroutine_threadsafe(clients(), self.loop).result(10)
        return self

    def stop(self) -> None:
        """Every driver gone (before the API processes stop: a long-poll would hold each
        one's graceful shutdown)."""
        self.closing = True

        async def shutdown() -> None:
            for task in list(self.tasks):
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
            for client in self.clients:
                await client.aclose()

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(20)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        def begin() -> None:
            task = self.loop.create_task(coro)
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

        self.loop.call_soon_threadsafe(begin)

    def start_running(self, driver: Driver) -> None:
        self.spawn(self._running(driver))

    def spare_submitted(self, batch_id: int, conf: dict[str, str]) -> None:
        """The fake got a spare's POST /batches: its driver starts (a real one would take
        its JVM and session first; this one calls in at once)."""
        driver = Driver(
            int(conf[RUN_ID_CONF]),
            int(conf[ATTEMPT_CONF]),
            batch_id,
            conf[TOKEN_CONF],
            spare=int(conf[SPARE_CONF]),
        )
        self.spawn(self._spare(driver))

    def wait_go(self, run_id: int, since: float, timeout: float) -> float | None:
        """When ``run_id``'s spare heard go after ``since`` (monotonic), or None."""
        with self.cond:
            self.cond.wait_for(lambda: self.go_at.get(run_id, 0.0) > since, timeout)
            at = self.go_at.get(run_id, 0.0)
        return at if at > since else None

    def _client(self, run_id: int) -> httpx.AsyncClient:
        # Round robin over the API processes in the order the runs first call in (a run keeps
        # its process, as behind a load balancer with sticky sessions).
        index = self.api_of.setdefault(run_id, len(self.api_of) % len(self.clients))
        return self.clients[index]

    def _gone(self, driver: Driver) -> bool:
        return self.closing or self.fake.state_of(driver.batch_id) != "running"

    async def _running(self, d: Driver) -> None:
        """A running driver: directives every ``directives_every`` s, progress every trigger;
        it ends when its batch does (killed, dead) or its directives say stop."""
        self.running[d.run_id] = d
        client, headers = self._client(d.run_id), {"Authorization": f"Bearer {d.token}"}
        loop = asyncio.get_running_loop()
        # Drivers started together do not beat together.
        next_directives = loop.time() + random.random() * (self.directives_every or 1)
        next_progress = loop.time() + random.random() * self.trigger
        batch = 1
        try:
            while not self._gone(d):
                if not self.reporting.is_set():
                    await asyncio.sleep(0.2)
                    next_directives = max(next_directives, loop.time())
                    next_progress = max(next_progress, loop.time())
                    continue
                now = loop.time()
                try:
                    if self.directives_every and now >= next_directives:
                        next_directives = max(next_directives + self.directives_every, now)
                        r = await client.get(
                            f"/runs/{d.run_id}/directives",
                            params={"attempt": d.attempt},
                            headers=headers,
                        )
                        self._count("directives", r)
                        if r.status_code == 200 and r.json()["stop"]:
                            self.fake.set_state(d.batch_id, "success")  # stops and exits
                            return
                    if now >= next_progress:
                        next_progress = max(next_progress + self.trigger, now)
                        r = await client.post(
                            f"/runs/{d.run_id}/progress", json=_progress(batch), headers=headers
                        )
                        self._count("progress", r)
                        batch += 1
                except httpx.HTTPError:
                    self.counts["transport errors"] += 1
                    await asyncio.sleep(0.5)
                wake = min(next_progress, next_directives if self.directives_every else 1e18)
                await asyncio.sleep(max(0.0, wake - loop.time()))
        finally:
            if self.running.get(d.run_id) is d:
                del self.running[d.run_id]

    async def _spare(self, d: Driver) -> None:
        """A spare: long-polls for go; at go it is the run's driver for its attempt."""
        self.spares[d.run_id] = d
        client, headers = self._client(d.run_id), {"Authorization": f"Bearer {d.token}"}
        params = {"attempt": d.attempt, "wait": LONG_POLL, "spare": d.spare}
        went = False
        try:
            while not self._gone(d):
                self.polling += 1
                try:
                    r = await client.get(
                        f"/runs/{d.run_id}/standby", params=params, headers=headers
                    )
                except httpx.HTTPError:
                    self.counts["transport errors"] += 1
                    await asyncio.sleep(0.5)
                    continue
                finally:
                    self.polling -= 1
                self._count("standby", r)
                if r.status_code == 503:  # this API process holds all it may: as told
                    await asyncio.sleep(float(r.headers.get("Retry-After", "2")))
                    continue
                if r.status_code != 200:
                    await asyncio.sleep(1.0)
                    continue
                answer = r.json()
                if answer["go"]:
                    with self.cond:
                        self.go_at[d.run_id] = time.monotonic()
                        self.cond.notify_all()
                    went = True
                    return
                if answer["stop"]:
                    return
        finally:
            if self.spares.get(d.run_id) is d:
                del self.spares[d.run_id]
            if went:
                self.start_running(Driver(d.run_id, d.attempt, d.batch_id, d.token))

    def _count(self, kind: str, r: httpx.Response) -> None:
        self.counts[kind] += 1
        if r.status_code >= 300:
            self.counts[f"{kind} {r.status_code}"] += 1


# ---- what the processes use -----------------------------------------------------------------


def _cpu(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


def _pg_backends(url: str) -> list[psutil.Process]:
    with psycopg.connect(url, autocommit=True) as conn:
        pids = [
            int(pid)
            for (pid,) in conn.execute(
                "select pid from pg_stat_activity where datname = current_database() "
                "and pid <> pg_backend_pid()"
            ).fetchall()
        ]
    found = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            _cpu(proc)
            found.append(proc)
        except psutil.Error:  # another user's process we may not read, or gone
            pass
    return found


class Connections:
    """pg_stat_activity every second, each connection attributed to the process that holds
    its client port (the API and the worker both call themselves "tidegate")."""

    def __init__(self, url: str, procs: dict[str, psutil.Process], drivers: Drivers) -> None:
        self.url = url
        self.procs = procs
        self.drivers = drivers
        self.phase = "start-up"
        self.samples: list[dict[str, Any]] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="connections", daemon=True)

    def start(self) -> Connections:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(10)

    def _run(self) -> None:
        with psycopg.connect(self.url, autocommit=True, application_name="bench") as conn:
            while not self.stopping.wait(1.0):
                rows = conn.execute(
                    "select client_port, application_name from pg_stat_activity "
                    "where datname = current_database() and pid <> pg_backend_pid()"
                ).fetchall()
                owner: dict[int, str] = {}
                for name, proc in self.procs.items():
                    try:
                        for c in proc.net_connections(kind="tcp"):
                            if c.raddr and c.raddr.port == 5432:
                                owner[c.laddr.port] = name
                    except psutil.Error:
                        pass
                by_proc = Counter(owner.get(port or -1, "other") for port, _ in rows)
                self.samples.append(
                    {
                        "phase": self.phase,
                        "waiting": self.drivers.polling,
                        "by_process": dict(by_proc),
                        "by_application": dict(Counter(str(app) for _, app in rows)),
                    }
                )

    def summary(self) -> dict[str, Any]:
        """Per phase: the most each process held at once, and the most waiting spares."""
        out: dict[str, Any] = {}
        for s in self.samples:
            phase = out.setdefault(s["phase"], {"samples": 0, "max_waiting": 0, "max": {}})
            phase["samples"] += 1
            phase["max_waiting"] = max(phase["max_waiting"], s["waiting"])
            groups = {
                "api (both)": sum(v for k, v in s["by_process"].items() if k.startswith("api")),
                "worker (both)": sum(
                    v for k, v in s["by_process"].items() if k.startswith("worker")
                ),
                **s["by_process"],
            }
            for k, v in groups.items():
                phase["max"][k] = max(phase["max"].get(k, 0), v)
        return out


@dataclass
class Procs:
    apis: dict[str, psutil.Process]
    workers: dict[str, psutil.Process]
    bench: psutil.Process = field(default_factory=psutil.Process)


def rest_window(
    url: str, procs: Procs, drivers: Drivers, seconds: float, *, sweep: bool = False
) -> dict[str, Any]:
    """Cores used by each process over ``seconds`` with nothing asked of the control plane
    but what the fleet asks. ``sweep``: also how often the workers observe each run."""
    every = {**procs.apis, **procs.workers, "bench": procs.bench}
    backends = _pg_backends(url)
    before = {k: _cpu(p) for k, p in every.items()}
    pg_before = {p.pid: _cpu(p) for p in backends}
    counts_before = Counter(drivers.counts)
    machine_before = psutil.cpu_times()
    t0 = time.monotonic()
    observed: dict[int, set[Any]] = {}
    with psycopg.connect(url, autocommit=True, application_name="bench") as conn:
        while (left := seconds - (time.monotonic() - t0)) > 0:
            if sweep:
                for run_id, at in conn.execute(
                    "select id, observed_at from runs where state = 'running'"
                ).fetchall():
                    observed.setdefault(int(run_id), set()).add(at)
            time.sleep(min(1.0, left))
    elapsed = time.monotonic() - t0
    cores = {k: (_cpu(p) - before[k]) / elapsed for k, p in every.items()}
    pg = 0.0
    for p in backends:
        with suppress(psutil.Error):
            pg += _cpu(p) - pg_before[p.pid]
    machine_after = psutil.cpu_times()
    busy = sum(machine_after[:3]) - sum(machine_before[:3])  # user, nice, system
    requests = Counter(drivers.counts)
    requests.subtract(counts_before)
    api = sum(v for k, v in cores.items() if k.startswith("api"))
    worker = sum(v for k, v in cores.items() if k.startswith("worker"))
    channel = sum(requests[k] for k in ("directives", "progress", "standby"))
    out: dict[str, Any] = {
        "seconds": elapsed,
        "cores": {
            "api": api,
            "worker": worker,
            "api+worker": api + worker,
            "postgres (this database)": pg / elapsed,
            "bench (drivers, fake Livy)": cores["bench"],
            "machine (all processes)": busy / elapsed,
        },
        "per_process_cores": {k: v for k, v in cores.items() if k != "bench"},
        "channel_requests_per_s": channel / elapsed,
        "channel_requests": {k: v for k, v in requests.items() if v},
        "waiting_long_polls": drivers.polling,
        "load_avg": os.getloadavg()[0],
    }
    if sweep and observed:
        # Passes per run in the window (both workers together; a run observed at most once
        # per sample, so a pass every < 1 s counts as 1 s).
        passes = [max(0, len(v) - 1) for v in observed.values()]
        mean = sum(passes) / len(passes)
        out["observed_every_s"] = elapsed / mean if mean else None
    return out


# ---- read load (in a process of its own) -----------------------------------------------------


def _load_child(
    scenario: str,
    who: str,
    urls: list[str],
    headers: dict[str, str] | None,
    jobs: int,
    concurrency: int,
    requests: int,
    seconds: float,
) -> dict[str, Any]:
    """One load level on ``urls`` (round robin): a warm-up, then the measured level."""
    prefix = "/api/v1" if who == "tidegate" else "/baseline"

    def request(c: httpx.AsyncClient, i: int) -> Any:
        base = urls[i % len(urls)] + prefix
        if scenario == READS[0]:
            return c.get(f"{base}/jobs/job-{(i * 7919) % jobs:07d}")
        return c.get(f"{base}/jobs", params={"limit": 50})

    kw: dict[str, Any] = {"concurrency": concurrency, "headers": headers}
    run_load(urls[0], request, max_requests=20, max_seconds=2, **kw)
    load = run_load(urls[0], request, max_requests=requests, max_seconds=seconds, **kw)
    return {
        "rps": load.rps,
        "p50": load.p50,
        "p99": load.p99,
        "requests": load.requests,
        "errors": load.errors,
        "latencies": load.latencies,
    }


def reads(
    pool: ProcessPoolExecutor,
    apis: list[str],
    bares: list[str],
    jobs: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    out: dict[str, Any] = {}
    for scenario in READS:
        rounds: dict[str, list[dict[str, Any]]] = {"tidegate": [], "baseline": []}
        for _ in range(args.rounds):  # interleaved, so drifts of load hit both alike
            for who, urls, headers in (("tidegate", apis, admin), ("baseline", bares, None)):
                level = pool.submit(
                    _load_child,
                    scenario,
                    who,
                    urls,
                    headers,
                    jobs,
                    args.concurrency,
                    args.requests,
                    args.seconds,
                ).result(timeout=args.seconds + 120)
                rounds[who].append(level)
        fig: dict[str, Any] = {}
        for who, levels in rounds.items():
            every = [x for level in levels for x in level["latencies"]]
            fig[who] = {
                "rps": median([lv["rps"] for lv in levels]),
                "p50_ms": median([lv["p50"] for lv in levels]) * 1000,
                "p99_ms": median([lv["p99"] for lv in levels]) * 1000,
                "p99_pooled_ms": percentile(every, 99) * 1000,
                "rps_spread": [min(lv["rps"] for lv in levels), max(lv["rps"] for lv in levels)],
                "requests": sum(lv["requests"] for lv in levels),
                "errors": sum(lv["errors"] for lv in levels),
            }
        t, b = fig["tidegate"], fig["baseline"]
        fig["ratio"] = {
            "rps": t["rps"] / b["rps"] if b["rps"] else None,
            "p99": t["p99_ms"] / b["p99_ms"] if b["p99_ms"] else None,
        }
        out[scenario] = fig
    return out


# ---- death -> go, operation reaction --------------------------------------------------------


def deaths(
    url: str, fake: FleetLivy, drivers: Drivers, simulated: list[int], n: int, timeout: float
) -> list[dict[str, Any]]:
    """One at a time: a running driver with a ready spare dies; until the spare hears go."""
    with psycopg.connect(url, autocommit=True) as conn:
        ready = [
            int(r)
            for (r,) in conn.execute(
                "select id from runs where id = any(%s) and state = 'running' "
                "and spare_ready_at is not null and spare_attempt = attempt + 1 order by id",
                (simulated,),
            ).fetchall()
        ]
    rng = random.Random(24)
    out = []
    for run_id in [ready[i] for i in spread(min(n, len(ready)), len(ready))]:
        driver = drivers.running.get(run_id)
        if driver is None or run_id not in drivers.spares:
            continue
        time.sleep(rng.random())  # not in step with the workers' sweeps
        wall, t0 = time.time(), time.monotonic()
        fake.set_state(driver.batch_id, "dead")
        go = drivers.wait_go(run_id, t0, timeout)
        with psycopg.connect(url, autocommit=True) as conn:
            seen = conn.execute(
                "select min(at) from run_transitions where run_id = %s and to_state = "
                "'restarting' and at >= to_timestamp(%s)",
                (run_id, wall - 0.01),
            ).fetchone()
        seen_at = seen[0].timestamp() - wall if seen and seen[0] is not None else None
        out.append(
            {
                "run_id": run_id,
                "death_to_go_s": go - t0 if go is not None else None,
                "death_to_seen_s": seen_at,
            }
        )
        print(
            f"  run {run_id}: death -> seen "
            + (f"{seen_at:.2f} s" if seen_at is not None else "n/a")
            + " -> go "
            + (f"{go - t0:.2f} s" if go is not None else f"none within {timeout:.0f} s")
        )
    return out


def operations(
    clients: list[httpx.Client], fake: FleetLivy, runs: list[SeededRun], n: int, timeout: float
) -> list[dict[str, Any]]:
    """POST /jobs/{job}/stop, one at a time, on runs without a driver (they stop at once,
    no batch boundary to wait for) -> the fake's DELETE /batches/{id}."""
    out = []
    for i, run in enumerate(runs[:n]):
        client = clients[i % len(clients)]
        t0 = time.monotonic()
        r = client.post(f"/jobs/{run.job}/stop")
        assert r.status_code == 202, r.text
        deadline = t0 + timeout
        while run.batch_id not in fake.deleted_at and time.monotonic() < deadline:
            time.sleep(0.005)
        deleted = fake.deleted_at.get(run.batch_id)
        done = None
        while time.monotonic() < deadline:
            op = client.get(f"/operations/{r.json()['id']}").json()
            if op["state"] in ("succeeded", "failed"):
                done = time.monotonic() - t0 if op["state"] == "succeeded" else None
                break
            time.sleep(0.05)
        out.append(
            {
                "job": run.job,
                "stop_to_delete_s": deleted - t0 if deleted is not None else None,
                "stop_to_succeeded_s": done,
            }
        )
    return out


# ---- the run ----------------------------------------------------------------------------------


def _stats(values: list[float | None]) -> dict[str, Any]:
    got = [v for v in values if v is not None]
    return {
        "p50_ms": percentile(got, 50) * 1000 if got else None,
        "p99_ms": percentile(got, 99) * 1000 if got else None,
        "max_ms": max(got) * 1000 if got else None,
        "samples": len(values),
        "missed": len(values) - len(got),
    }


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f} ms" if value >= 100 else f"{value:.1f} ms"


def _wait_ready(url: str, run_ids: list[int], drivers: Drivers, timeout: float) -> int:
    """Until every one of ``run_ids`` has a ready spare with its long-poll in flight."""
    deadline = time.monotonic() + timeout
    ready = 0
    with psycopg.connect(url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "select count(*) from runs where id = any(%s) and spare_ready_at is not null",
                (run_ids,),
            ).fetchone()
            ready = int(row[0]) if row else 0
            if ready >= len(run_ids) and drivers.polling >= len(run_ids):
                break
            time.sleep(0.25)
    return ready


def stop_all(apis: list[Server], others: list[Server]) -> None:
    """Every server at once (each waits for its own exit, bounded). The API processes get a
    second SIGINT: the simulated drivers' long-polls, whose clients are gone, would otherwise
    hold each one's graceful shutdown for its full 10 s."""
    for server in apis:
        if server.proc.poll() is None:
            server.proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    for server in apis:
        if server.proc.poll() is None:
            server.proc.send_signal(signal.SIGINT)
    threads = [threading.Thread(target=s.stop) for s in [*apis, *others]]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)


@contextmanager
def _phase(conns: Connections, name: str) -> Iterator[None]:
    print(f"\n[{time.strftime('%H:%M:%S')}] {name}", flush=True)
    conns.phase = name
    yield


def measure(url: str, fake: FleetLivy, runs: list[SeededRun], args: argparse.Namespace) -> Any:
    tmp = Path(tempfile.mkdtemp(prefix="tidegate-bench-fleet-"))
    env = tidegate_env(url, tmp)
    ports = [free_port() for _ in range(2)]
    api_urls = [f"http://127.0.0.1:{p}" for p in ports]
    worker_env = {**env, "TIDEGATE_PUBLIC_URL": api_urls[0]}
    api = ["-m", "app.cli", "api", "--no-migrate"]
    worker = ["-m", "app.cli", "worker", "--concurrency", str(WORKER_CONCURRENCY)]
    servers = [
        serve(api, {**env, "TIDEGATE_PORT": str(ports[0])}, tmp / "api-1.log", "/healthz"),
        serve(api, {**env, "TIDEGATE_PORT": str(ports[1])}, tmp / "api-2.log", "/healthz"),
        serve(worker, worker_env, tmp / "worker-1.log", None),
        serve(worker, worker_env, tmp / "worker-2.log", None),
        serve(["bench/baseline_app.py"], env, tmp / "bare-1.log", "/healthz"),
        serve(["bench/baseline_app.py"], env, tmp / "bare-2.log", "/healthz"),
    ]
    simulated = [r for r in runs if r.token]
    quiet = [r for r in runs if not r.token]
    figures: dict[str, Any] = {}
    t = time.monotonic()
    with started(*servers) as up:
        print(f"2 API, 2 worker, 2 bare processes up in {time.monotonic() - t:.1f} s ({tmp})")
        names = ["api-1", "api-2", "worker-1", "worker-2"]
        procs = Procs(
            apis={n: psutil.Process(s.proc.pid) for n, s in zip(names[:2], up[:2], strict=True)},
            workers={
                n: psutil.Process(s.proc.pid) for n, s in zip(names[2:], up[2:4], strict=True)
            },
        )
        drivers = Drivers(api_urls, fake, args.trigger, args.directives_every).start()
        fake.on_spare = drivers.spare_submitted
        owners = {**procs.apis, **procs.workers, "bare-1": psutil.Process(up[4].proc.pid)}
        owners["bare-2"] = psutil.Process(up[5].proc.pid)
        conns = Connections(url, owners, drivers).start()
        ctx = multiprocessing.get_context("spawn")
        clients = [api_client(u) for u in api_urls]
        try:
            for r in simulated:
                drivers.start_running(Driver(r.run_id, 1, r.batch_id, r.token or ""))
            with _phase(conns, "rest, no spares"):
                time.sleep(args.warm_up)  # every driver has called in, a sweep or two ran
                figures["rest_no_spares"] = rest_window(url, procs, drivers, args.rest_seconds)

            with _phase(conns, "spares starting"):
                t0 = time.monotonic()
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute(
                        "update jobs set hot_spare = true where name = any(%s)",
                        ([r.job for r in simulated],),
                    )
                ids = [r.run_id for r in simulated]
                ready = _wait_ready(url, ids, drivers, args.ready_timeout)
                figures["spares"] = {
                    "wanted": len(ids),
                    "ready": ready,
                    "all_ready_s": time.monotonic() - t0,
                    "submitted": fake.counts["POST /batches"],
                }
                print(f"  {ready}/{len(ids)} spares ready in {time.monotonic() - t0:.1f} s")

            with _phase(conns, "rest, spares waiting"):
                time.sleep(1.0)
                figures["rest_spares"] = rest_window(
                    url, procs, drivers, args.rest_seconds, sweep=True
                )
            with _phase(conns, "rest, spares waiting, drivers silent"):
                drivers.reporting.clear()
                time.sleep(1.0)
                figures["rest_silent"] = rest_window(url, procs, drivers, args.rest_seconds)
                drivers.reporting.set()

            with (
                _phase(conns, "reads at concurrency 16"),
                ProcessPoolExecutor(1, mp_context=ctx) as pool,
            ):
                bares = [s.url for s in up[4:]]
                figures["reads"] = reads(pool, api_urls, bares, len(runs), args)

            with _phase(conns, "deaths"):
                figures["deaths"] = deaths(
                    url, fake, drivers, [r.run_id for r in simulated], args.deaths, 60.0
                )

            with _phase(conns, "operations"):
                picks = [quiet[i] for i in spread(min(args.operations, len(quiet)), len(quiet))]
                figures["operations"] = operations(clients, fake, picks, len(picks), 60.0)
            conns.phase = "end"
            figures["driver_requests"] = dict(drivers.counts)
            figures["backend_calls"] = dict(fake.counts)
        finally:
            drivers.stop()
            conns.stop()
            for c in clients:
                c.close()
            stop_all(up[:2], up[2:])
        figures["connections"] = conns.summary()
    return figures


def report(figures: dict[str, Any], args: argparse.Namespace) -> None:
    rows = []
    for key, label in (
        ("rest_no_spares", "at rest, no spares"),
        ("rest_spares", f"at rest, {args.waiting} spares waiting"),
        ("rest_silent", "at rest, spares waiting, drivers silent"),
    ):
        w = figures[key]
        c = w["cores"]
        rows.append(
            [
                label,
                f"{c['api']:.2f}",
                f"{c['worker']:.2f}",
                f"{c['api+worker']:.2f}",
                f"{c['postgres (this database)']:.2f}",
                f"{c['bench (drivers, fake Livy)']:.2f}",
                f"{c['machine (all processes)']:.2f}",
                f"{w['channel_requests_per_s']:.0f}",
                f"{w['load_avg']:.1f}",
            ]
        )
    print(f"\nCPU in cores over {args.rest_seconds:.0f} s windows ({os.cpu_count()} cores)")
    print(
        table(
            rows,
            [
                "window",
                "API",
                "worker",
                "API+worker",
                "postgres",
                "bench",
                "machine",
                "channel req/s",
                "load",
            ],
        )
    )
    every = figures["rest_spares"].get("observed_every_s")
    if every:
        print(f"each running run observed by a worker every {every:.1f} s (both workers)")

    rows = []
    for scenario, f in figures["reads"].items():
        t, b = f["tidegate"], f["baseline"]
        rows.append(
            [
                scenario,
                f"{t['rps']:.0f}",
                _ms(t["p50_ms"]),
                _ms(t["p99_ms"]),
                f"{b['rps']:.0f}",
                _ms(b["p50_ms"]),
                _ms(b["p99_ms"]),
                ratio(t["rps"], b["rps"]),
                str(t["errors"] + b["errors"]),
            ]
        )
    print(f"\nreads at concurrency {args.concurrency} over both processes (medians of rounds)")
    print(
        table(
            rows,
            [
                "request",
                "tg req/s",
                "tg p50",
                "tg p99",
                "bare req/s",
                "bare p50",
                "bare p99",
                "req/s ratio",
                "errors",
            ],
        )
    )

    d, o = figures["death_to_go"], figures["stop_to_delete"]
    seen = figures["death_to_seen"]
    rows = [
        ["driver death -> spare hears go", _ms(d["p50_ms"]), _ms(d["p99_ms"]), str(d["samples"])],
        ["driver death -> worker sees it", _ms(seen["p50_ms"]), _ms(seen["p99_ms"]), ""],
        [
            "POST stop -> DELETE /batches/{id}",
            _ms(o["p50_ms"]),
            _ms(o["p99_ms"]),
            str(o["samples"]),
        ],
    ]
    print()
    print(table(rows, ["from -> to", "p50", "p99", "n"]))
    if d["missed"] or o["missed"]:
        print(f"missed: {d['missed']} deaths without go, {o['missed']} stops without DELETE")

    print("\nPostgreSQL connections, most held at once (limit: configured pools)")
    limits = figures["pool_limits"]
    rows = []
    for phase, p in figures["connections"].items():
        m = p["max"]
        rows.append(
            [
                phase,
                str(p["max_waiting"]),
                f"{m.get('api-1', 0)}/{m.get('api-2', 0)}",
                f"{m.get('worker-1', 0)}/{m.get('worker-2', 0)}",
                f"{m.get('bare-1', 0)}/{m.get('bare-2', 0)}",
                str(m.get("other", 0)),
            ]
        )
    print(
        table(
            rows,
            [
                "phase",
                "waiting",
                f"API 1/2 (<= {limits['api']})",
                f"worker 1/2 (<= {limits['worker']})",
                "bare 1/2",
                "other",
            ],
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1000, help="running runs")
    parser.add_argument("--waiting", type=int, default=200, help="of them with a waiting spare")
    parser.add_argument("--trigger", type=float, default=10.0, help="s between progress reports")
    parser.add_argument(
        "--directives-every", type=float, default=1.0, help="s between directive reads (0: none)"
    )
    parser.add_argument("--warm-up", type=float, default=5.0, help="s before the first window")
    parser.add_argument("--rest-seconds", type=float, default=15.0, help="each rest window")
    parser.add_argument("--ready-timeout", type=float, default=300.0)
    parser.add_argument("--rounds", type=int, default=3, help="read rounds, interleaved")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--requests", type=int, default=3000, help="max requests per level")
    parser.add_argument("--seconds", type=float, default=5.0, help="max seconds per level")
    parser.add_argument("--deaths", type=int, default=10)
    parser.add_argument("--operations", type=int, default=10)
    args = parser.parse_args()
    if not 0 < args.waiting <= args.jobs:
        parser.error("--waiting must be between 1 and --jobs")

    load_start = os.getloadavg()[0]
    print(f"load average at start: {load_start:.2f} ({os.cpu_count()} cores)")
    fake = FleetLivy()
    fake.start()
    try:
        with scratch_database("tidegate_bench_fleet") as url:
            t0 = time.monotonic()
            runs = seed_fleet(url, fake, args.jobs, args.waiting)
            print(f"seeded {args.jobs} running runs in {time.monotonic() - t0:.1f} s")
            figures = measure(url, fake, runs, args)
    finally:
        fake.stop()
    load_end = os.getloadavg()[0]

    figures["death_to_go"] = _stats([d["death_to_go_s"] for d in figures["deaths"]])
    figures["death_to_seen"] = _stats([d["death_to_seen_s"] for d in figures["deaths"]])
    figures["stop_to_delete"] = _stats([o["stop_to_delete_s"] for o in figures["operations"]])
    figures["stop_to_succeeded"] = _stats([o["stop_to_succeeded_s"] for o in figures["operations"]])
    figures["pool_limits"] = {"api": 2 * API_POOL + 1, "worker": 2 * (WORKER_CONCURRENCY + 4) + 1}
    figures["load_avg"] = {"start": load_start, "end": load_end}
    figures["settings"] = vars(args)
    figures["spares_path"] = "worker-submitted spares (hot_spare), played by simulated drivers"
    report(figures, args)
    print(f"\nload average {load_start:.2f} at start, {load_end:.2f} at end")
    save("fleet", figures)


if __name__ == "__main__":
    main()
