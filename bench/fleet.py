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
  as the runtime does. The same runs' current drivers are simulated too: progress every
  ``--trigger`` s and, with ``--directives-every 1``, directives every second as the runtime
  polls them (off by default: the issue's drivers report progress and long-poll). One HTTP
  connection per request, like the runtime's urllib client. The other runs have no driver.
  Each run's drivers go to one of the two API processes, round robin (a load balancer). The
  drivers run in a process of their own: in this one they would delay the fake's answers.

Measured, while that runs:
- CPU (user + system, psutil) of the API and worker processes, in cores, over rest windows
  of 25 s (every waiting spare's long-poll is answered once in each): the fleet without
  spares; with every spare waiting; with the spares waiting and the running drivers silent.
  Also this database's PostgreSQL backends, the drivers' process, this process (the fake
  and the sampling), the whole machine, and the database connections opened.
- PostgreSQL connections in use, sampled every second from pg_stat_activity and attributed
  to each process by its client port, against the configured pools (API: 2 x
  TIDEGATE_DB_POOL_SIZE + its LISTEN connection; worker: 2 x (concurrency + 4) + LISTEN),
  with and without waiting spares.
- Read latency and throughput at concurrency 16 (GET /jobs/{job}, GET /jobs?limit=50,
  GET /runs/{id}) over the two API processes, against two bare FastAPI + psycopg apps
  (bench/baseline_app.py) in the same run, rounds interleaved; the load generator runs in a
  process of its own.
- Death -> go: a running driver's batch turns "dead" in the fake; from then until its
  spare's long-poll answers go; from the run's transitions, when a worker saw the death and
  when it adopted the spare (the NOTIFY).
- Operation reaction: POST /jobs/{job}/stop (a run with no driver) -> DELETE /batches/{id}.

    python bench/fleet.py                      # the issue's sizes, ~5 minutes on 2 cores
    python bench/fleet.py --directives-every 1 --name fleet-directives
    python bench/fleet.py --jobs 20 --waiting 5 --warm-up 1 --rest-seconds 1 --rounds 1 \\
        --requests 40 --seconds 0.5 --deaths 2 --operations 2   # smoke size (tests/bench)

Figures go to bench/results/<name>.json, fleet.json by default (TIDEGATE_BENCH_RESULTS=dir to
write elsewhere).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import os
import random
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
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
    ROOT,
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
from tidegate_runtime import contract

# What the worker puts in a spare's submission (app/worker/core/submission.py::run_spec; Livy
# carries the env as spark.yarn.appMasterEnv.*, app/backends/livy.py::env_conf).
LISTING = "GET /batches?from=0 (a listing starts)"
LONG_POLL = 25  # tidegate_runtime/driver/standby.py::LONG_POLL_SECONDS
API_POOL = 10  # TIDEGATE_DB_POOL_SIZE's default, which the API processes run with
WORKER_CONCURRENCY = 4  # `tidegate worker --concurrency`'s default
APP_NAME_PREFIX = "tidegate-bench-"  # + a server's name: PGAPPNAME of its connections
READS = ("GET /jobs/{job}", "GET /jobs (page of 50)", "GET /runs/{id}")

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
    on_gone: Callable[[int], None] | None = None  # a batch ended (its driver stops)
    deleted_at: dict[int, float] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)

    def add_running(self, name: str) -> int:
        with self.lock:
            batch_id = len(self.batches)
            self.batches[batch_id] = {"id": batch_id, "name": name, "state": "running"}
            return batch_id

    def set_state(self, batch_id: int, state: str) -> None:
        with self.lock:
            self.batches[batch_id]["state"] = state
        if state != "running" and self.on_gone is not None:
            self.on_gone(batch_id)

    def record(self, method: str, path: str, name: str | None = None) -> None:
        # Calls are counted, not kept: two workers list 1,000+ batches every second.
        url = urlsplit(path)
        what = f"{method} {re.sub(r'/[0-9]+', '/{id}', url.path)}"
        with self.lock:
            self.counts[what] += 1
            if what == "GET /batches" and "from=0" in url.query.split("&"):
                self.counts[LISTING] += 1

    def create(self, payload: dict[str, Any]) -> tuple[int, Any]:
        status, body = super().create(payload)
        conf = payload.get("conf") or {}
        if status == 201 and conf.get(contract.SPARE) and self.on_spare is not None:
            self.on_spare(int(body["id"]), conf)
        return status, body

    def delete(self, raw: str) -> tuple[int, Any]:
        tail = raw.rsplit("/", 1)[-1]
        if tail.isdigit():
            with self.lock:
                self.deleted_at.setdefault(int(tail), time.monotonic())
        status, body = super().delete(raw)
        if status == 200 and self.on_gone is not None:
            self.on_gone(int(tail))
        return status, body


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
            # Observed running already, as in a fleet that has been up a while.
            "insert into runs (job_id, version_id, state, attempt, failures, progress, "
            "submit_intent_attempt, created_by, created_at, updated_at, running_since, "
            "observed_state, observed_at) "
            "select j.id, v.id, 'running', 1, 0, '{}', 1, 'bench', now() - interval '1 hour', "
            "now(), now() - interval '10 minutes', 'running', now() "
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


def _progress(batch: int) -> contract.ProgressReport:
    """A progress report like the runtime's (tidegate_runtime/driver/channel.py::progress_report)
    shaped by the contract."""
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


def _after_now(due: float, every: float, now: float) -> float:
    """The next beat after ``now`` on the grid ``due + k * every``: a driver that fell behind
    skips what it missed and keeps its phase, so delayed drivers do not fall into step."""
    if due > now:
        return due
    return due + max(1, math.ceil((now - due) / every + 1e-9)) * every


class DriverLoop:
    """Every simulated driver, on one asyncio loop in a process of their own (so that their
    work does not delay the fake's answers to the workers, which share this script's GIL
    otherwise). Told what to do by ``commands``, it says what happened on ``events``."""

    def __init__(
        self,
        api_urls: list[str],
        trigger: float,
        directives_every: float,
        commands: Any,
        events: Any,
    ) -> None:
        self.api_urls = api_urls
        self.trigger = trigger
        self.directives_every = directives_every
        self.commands = commands
        self.events = events
        self.reporting = True  # False: running drivers stay silent
        self.gone: set[int] = set()  # batches that ended: their drivers stop
        self.spares: set[int] = set()  # runs whose spare is waiting
        self.polling = 0  # long-polls in flight
        self.counts: Counter[str] = Counter()
        self.lags: list[float] = []
        self.tasks: set[asyncio.Task[None]] = set()
        self.clients: list[httpx.AsyncClient] = []
        self.api_of: dict[int, int] = {}
        self.closing = asyncio.Event()

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        # Like the runtime's urllib client: one connection per request, none kept.
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
        self.clients = [
            httpx.AsyncClient(base_url=u + "/api/v1", timeout=LONG_POLL + 15, limits=limits)
            for u in self.api_urls
        ]

        def read_commands() -> None:
            while True:
                command = self.commands.get()
                loop.call_soon_threadsafe(self._do, command)
                if command[0] == "stop":
                    return

        threading.Thread(target=read_commands, name="commands", daemon=True).start()
        self._spawn(self._lag())
        self._spawn(self._status())
        await self.closing.wait()
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        for client in self.clients:
            await client.aclose()
        self._send_status()

    def _do(self, command: tuple[Any, ...]) -> None:
        kind = command[0]
        if kind == "run":
            self._spawn(self._running(command[1]))
        elif kind == "spare":
            self._spawn(self._spare(command[1]))
        elif kind == "gone":
            self.gone.add(command[1])
        elif kind == "report":
            self.reporting = command[1]
        elif kind == "stop":
            self.closing.set()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _lag(self) -> None:
        """How late this loop wakes (a driver's delay that is this script's, not tidegate's)."""
        loop = asyncio.get_running_loop()
        while True:
            t0 = loop.time()
            await asyncio.sleep(0.05)
            self.lags.append(loop.time() - t0 - 0.05)

    async def _status(self) -> None:
        while True:
            await asyncio.sleep(0.5)
            self._send_status()

    def _send_status(self) -> None:
        lags, self.lags = self.lags, []
        self.events.put(("status", self.polling, dict(self.counts), sorted(self.spares), lags))

    def _client(self, run_id: int) -> httpx.AsyncClient:
        # Round robin over the API processes in the order the runs first call in (a run keeps
        # its process, as behind a load balancer with sticky sessions).
        index = self.api_of.setdefault(run_id, len(self.api_of) % len(self.clients))
        return self.clients[index]

    async def _running(self, d: Driver) -> None:
        """A running driver: directives every ``directives_every`` s, progress every trigger;
        it ends when its batch does (killed, dead) or its directives say stop."""
        client, headers = self._client(d.run_id), {"Authorization": f"Bearer {d.token}"}
        loop = asyncio.get_running_loop()
        # Drivers started together do not beat together.
        next_directives = loop.time() + random.random() * (self.directives_every or 1)
        next_progress = loop.time() + random.random() * self.trigger
        batch = 1
        while d.batch_id not in self.gone:
            if not self.reporting:
                # Silent, but in step: when reporting resumes the drivers do not all report
                # at once (200 posts in one burst would be this script's doing).
                await asyncio.sleep(0.2)
                next_progress = _after_now(next_progress, self.trigger, loop.time())
                if self.directives_every:
                    next_directives = _after_now(
                        next_directives, self.directives_every, loop.time()
                    )
                continue
            now = loop.time()
            try:
                if self.directives_every and now >= next_directives:
                    next_directives = _after_now(next_directives, self.directives_every, now)
                    r = await client.get(
                        contract.RUN_CHANNEL.format(run_id=d.run_id) + contract.DIRECTIVES_PATH,
                        params={"attempt": d.attempt},
                        headers=headers,
                    )
                    self._count("directives", r)
                    if r.status_code == 200 and r.json()["stop"]:
                        self.events.put(("ended", d.batch_id))  # stops and exits
                        return
                if now >= next_progress:
                    next_progress = _after_now(next_progress, self.trigger, now)
                    r = await client.post(
                        contract.RUN_CHANNEL.format(run_id=d.run_id) + contract.PROGRESS_PATH,
                        json=_progress(batch),
                        headers=headers,
                    )
                    self._count("progress", r)
                    batch += 1
            except httpx.HTTPError:
                self.counts["transport errors"] += 1
                await asyncio.sleep(0.5)
            wake = min(next_progress, next_directives if self.directives_every else 1e18)
            await asyncio.sleep(max(0.0, wake - loop.time()))

    async def _spare(self, d: Driver) -> None:
        """A spare: long-polls for go; at go it is the run's driver for its attempt."""
        self.spares.add(d.run_id)
        client = self._client(d.run_id)
        bootstrap = {"Authorization": f"Bearer {d.token}"}
        traded = await client.post(
            contract.RUN_CHANNEL.format(run_id=d.run_id) + contract.TOKEN_PATH, headers=bootstrap
        )
        traded.raise_for_status()
        d.token = traded.json()["token"]
        headers = {"Authorization": f"Bearer {d.token}"}
        params = {"attempt": d.attempt, "wait": LONG_POLL, "spare": d.spare}
        went = False
        try:
            while d.batch_id not in self.gone:
                self.polling += 1
                try:
                    r = await client.get(
                        contract.RUN_CHANNEL.format(run_id=d.run_id) + contract.STANDBY_PATH,
                        params=params,
                        headers=headers,
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
                    self.events.put(("go", d.run_id, time.monotonic()))
                    went = True
                    return
                if answer["stop"]:
                    return
        finally:
            self.spares.discard(d.run_id)
            if went:
                self._spawn(self._running(Driver(d.run_id, d.attempt, d.batch_id, d.token)))

    def _count(self, kind: str, r: httpx.Response) -> None:
        self.counts[kind] += 1
        if r.status_code >= 300:
            self.counts[f"{kind} {r.status_code}"] += 1


def _drivers_child(
    api_urls: list[str], trigger: float, directives_every: float, commands: Any, events: Any
) -> None:
    asyncio.run(DriverLoop(api_urls, trigger, directives_every, commands, events).serve())


class Drivers:
    """This process's side of the simulated drivers: commands go to their process, what
    they report comes back (go, their counters, the spares waiting)."""

    def __init__(
        self, api_urls: list[str], fake: FleetLivy, trigger: float, directives_every: float
    ) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.fake = fake
        self.commands = ctx.Queue()
        self.events = ctx.Queue()
        self.proc = ctx.Process(
            target=_drivers_child,
            args=(api_urls, trigger, directives_every, self.commands, self.events),
            name="drivers",
            daemon=True,
        )
        self.cond = threading.Condition()
        self.go_at: dict[int, float] = {}
        self.spares: set[int] = set()
        self.polling = 0
        self.counts: Counter[str] = Counter()
        self.lags: list[float] = []
        self.pump = threading.Thread(target=self._pump, name="driver-events", daemon=True)

    def start(self) -> Drivers:
        self.proc.start()
        self.pump.start()
        return self

    def stop(self) -> None:
        """Every driver gone (before the API processes stop: a long-poll would hold each
        one's graceful shutdown)."""
        if self.proc.is_alive():
            self.commands.put(("stop",))
            self.proc.join(25)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)
        self.events.put(("stopped",))
        self.pump.join(5)

    def _pump(self) -> None:
        while True:
            event = self.events.get()
            kind = event[0]
            if kind == "stopped":
                return
            if kind == "go":
                with self.cond:
                    self.go_at[event[1]] = event[2]
                    self.cond.notify_all()
            elif kind == "ended":
                self.fake.set_state(event[1], "success")
            elif kind == "status":
                self.polling, self.counts = event[1], Counter(event[2])
                self.spares = set(event[3])
                self.lags.extend(event[4])

    def report(self, on: bool) -> None:
        self.commands.put(("report", on))

    def start_running(self, driver: Driver) -> None:
        self.commands.put(("run", driver))

    def spare_submitted(self, batch_id: int, conf: dict[str, str]) -> None:
        """The fake got a spare's POST /batches: its driver starts (a real one would take
        its JVM and session first; this one calls in at once)."""
        spare = Driver(
            int(conf[contract.RUN_ID]),
            int(conf[contract.ATTEMPT]),
            batch_id,
            # Traded for the run token first, as the runtime does.
            conf[f"spark.yarn.appMasterEnv.{contract.BOOTSTRAP_ENV}"],
            spare=int(conf[contract.SPARE]),
        )
        self.commands.put(("spare", spare))

    def batch_gone(self, batch_id: int) -> None:
        self.commands.put(("gone", batch_id))

    def wait_go(self, run_id: int, since: float, timeout: float) -> float | None:
        """When ``run_id``'s spare heard go after ``since`` (monotonic; one clock for every
        process here), or None."""
        with self.cond:
            self.cond.wait_for(lambda: self.go_at.get(run_id, 0.0) > since, timeout)
            at = self.go_at.get(run_id, 0.0)
        return at if at > since else None


# ---- what the processes use -----------------------------------------------------------------


def _cpu(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


class Backends:
    """CPU of this database's PostgreSQL backends, sampled: the server is shared (other
    databases' backends are not ours). A backend born and gone between two samples, or the
    last second of one that ends, is missed; the connections opened say how many come and go.
    """

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.started = True
        self.sample()
        self.started = False

    def sample(self) -> None:
        for (pid,) in self.conn.execute(
            "select pid from pg_stat_activity where datname = current_database() "
            "and pid <> pg_backend_pid()"
        ).fetchall():
            try:
                cpu = _cpu(psutil.Process(int(pid)))
            except psutil.Error:  # gone, or not ours to read
                continue
            # One that starts within the window counts from zero.
            self.first.setdefault(int(pid), cpu if self.started else 0.0)
            self.last[int(pid)] = cpu

    @property
    def seconds(self) -> float:
        return sum(self.last[pid] - first for pid, first in self.first.items())


def _sessions(conn: psycopg.Connection[Any]) -> int:
    """Connections ever opened to this database (pg_stat_database, flushed about every s)."""
    row = conn.execute(
        "select sessions from pg_stat_database where datname = current_database()"
    ).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


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
                    "select application_name, state from pg_stat_activity "
                    "where datname = current_database() and pid <> pg_backend_pid()"
                ).fetchall()
                # Each server names its pool's connections after itself (PGAPPNAME, set by
                # measure()); the socket, TCP or Unix, does not have to tell.
                by_proc = Counter(self._owner(app) for app, _ in rows)
                # In use: running a statement or inside a transaction (not idle in a pool).
                busy = Counter(self._owner(app) for app, state in rows if state != "idle")
                self.samples.append(
                    {
                        "phase": self.phase,
                        "waiting": self.drivers.polling,
                        "by_process": dict(by_proc),
                        "busy_by_process": dict(busy),
                        "by_application": dict(Counter(str(app) for app, _ in rows)),
                    }
                )

    def _owner(self, application: str | None) -> str:
        name = (application or "").removeprefix(APP_NAME_PREFIX)
        return name if name in self.procs else "other"

    def summary(self) -> dict[str, Any]:
        """Per phase: the most each process held at once, and the most waiting spares."""
        out: dict[str, Any] = {}
        for s in self.samples:
            phase = out.setdefault(
                s["phase"], {"samples": 0, "max_waiting": 0, "max": {}, "max_busy": {}}
            )
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
            for group in ("api", "worker"):
                v = sum(n for k, n in s["busy_by_process"].items() if k.startswith(group))
                phase["max_busy"][group] = max(phase["max_busy"].get(group, 0), v)
        return out


@dataclass
class Procs:
    apis: dict[str, psutil.Process]
    workers: dict[str, psutil.Process]
    bares: dict[str, psutil.Process]
    drivers: psutil.Process
    bench: psutil.Process = field(default_factory=psutil.Process)


def rest_window(
    url: str, procs: Procs, drivers: Drivers, fake: FleetLivy, seconds: float
) -> dict[str, Any]:
    """Cores used by each process over ``seconds`` with nothing asked of the control plane
    but what the fleet asks; and how often the workers list the backend (once a sweep)."""
    every = {
        **procs.apis,
        **procs.workers,
        **procs.bares,
        "drivers": procs.drivers,
        "bench": procs.bench,
    }
    with psycopg.connect(url, autocommit=True, application_name="bench") as conn:
        backends = Backends(conn)
        sessions_before = _sessions(conn)
        before = {k: _cpu(p) for k, p in every.items()}
        counts_before = Counter(drivers.counts)
        listings_before = fake.counts[LISTING]
        machine_before = psutil.cpu_times()
        t0 = time.monotonic()
        while (left := seconds - (time.monotonic() - t0)) > 0:
            time.sleep(min(1.0, left))
            backends.sample()
        elapsed = time.monotonic() - t0
        cores = {k: (_cpu(p) - before[k]) / elapsed for k, p in every.items()}
        sessions = _sessions(conn) - sessions_before
        listings = fake.counts[LISTING] - listings_before
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
            "postgres (this database)": backends.seconds / elapsed,
            "simulated drivers": cores["drivers"],
            "bench (fake Livy, sampling)": cores["bench"],
            "machine (all processes)": busy / elapsed,
            # What the rest of the machine used: the benchmark's other servers, PostgreSQL's
            # own processes and other databases, anything else running beside it.
            "rest of the machine": (busy - backends.seconds) / elapsed - sum(cores.values()),
        },
        "per_process_cores": cores,
        "channel_requests_per_s": channel / elapsed,
        "db_connections_opened_per_s": sessions / elapsed,
        "channel_requests": {k: v for k, v in requests.items() if v},
        "waiting_long_polls": drivers.polling,
        "load_avg": os.getloadavg()[0],
        # A sweep starts with a new listing (GET /batches from 0), and a long one lists again
        # once its listing is 1 s old: an upper bound on the sweeps, both workers together.
        "listings_per_s": listings / elapsed,
    }
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
        if scenario == READS[2]:  # the seeded runs are 1..jobs
            return c.get(f"{base}/runs/{(i * 7919) % jobs + 1}")
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


def _after(at: datetime | None, wall: float) -> float | None:
    return at.timestamp() - wall if at is not None else None


def deaths(
    url: str, fake: FleetLivy, drivers: Drivers, simulated: list[int], n: int, timeout: float
) -> list[dict[str, Any]]:
    """One at a time: a running driver with a ready spare dies; until the spare hears go."""
    with psycopg.connect(url, autocommit=True) as conn:
        ready = [
            (int(r), int(b))
            for (r, b) in conn.execute(
                "select id, backend_id from runs where id = any(%s) and state = 'running' "
                "and spare_ready_at is not null and spare_attempt = attempt + 1 order by id",
                (simulated,),
            ).fetchall()
        ]
    rng = random.Random(24)
    out = []
    for run_id, batch_id in [ready[i] for i in spread(min(n, len(ready)), len(ready))]:
        if run_id not in drivers.spares:  # its spare's long-poll is not out
            continue
        time.sleep(rng.random())  # not in step with the workers' sweeps
        wall, t0 = time.time(), time.monotonic()
        fake.set_state(batch_id, "dead")
        go = drivers.wait_go(run_id, t0, timeout)
        with psycopg.connect(url, autocommit=True) as conn:
            moves: dict[str, datetime] = dict(
                conn.execute(
                    "select to_state, min(at) from run_transitions where run_id = %s "
                    "and at >= to_timestamp(%s) and to_state in ('restarting', 'submitting') "
                    "group by to_state",
                    (run_id, wall - 0.01),
                ).fetchall()
            )

        sample = {
            "run_id": run_id,
            "death_to_go_s": go - t0 if go is not None else None,
            "death_to_seen_s": _after(moves.get("restarting"), wall),  # a worker saw it dead
            # restarting -> submitting: the same pass adopts the spare and sends NOTIFY
            "death_to_adopted_s": _after(moves.get("submitting"), wall),
        }
        out.append(sample)
        print(
            f"  run {run_id}: "
            + ", ".join(
                f"{k.removeprefix('death_to_').removesuffix('_s')} "
                + ("n/a" if v is None else f"{v:.2f} s")
                for k, v in sample.items()
                if k != "run_id"
            )
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

    def named(name: str, env: dict[str, str]) -> dict[str, str]:
        return {**env, "PGAPPNAME": APP_NAME_PREFIX + name}  # whose connection is whose

    servers = [
        serve(
            api,
            named("api-1", {**env, "TIDEGATE_PORT": str(ports[0])}),
            tmp / "api-1.log",
            "/healthz",
        ),
        serve(
            api,
            named("api-2", {**env, "TIDEGATE_PORT": str(ports[1])}),
            tmp / "api-2.log",
            "/healthz",
        ),
        serve(worker, named("worker-1", worker_env), tmp / "worker-1.log", None),
        serve(worker, named("worker-2", worker_env), tmp / "worker-2.log", None),
        serve(["bench/baseline_app.py"], named("bare-1", env), tmp / "bare-1.log", "/healthz"),
        serve(["bench/baseline_app.py"], named("bare-2", env), tmp / "bare-2.log", "/healthz"),
    ]
    simulated = [r for r in runs if r.token]
    quiet = [r for r in runs if not r.token]
    figures: dict[str, Any] = {}
    t = time.monotonic()
    with started(*servers) as up:
        print(f"2 API, 2 worker, 2 bare processes up in {time.monotonic() - t:.1f} s ({tmp})")
        names = ["api-1", "api-2", "worker-1", "worker-2", "bare-1", "bare-2"]
        found = {n: psutil.Process(s.proc.pid) for n, s in zip(names, up, strict=True)}
        drivers = Drivers(api_urls, fake, args.trigger, args.directives_every).start()
        fake.on_spare, fake.on_gone = drivers.spare_submitted, drivers.batch_gone
        procs = Procs(
            apis={n: p for n, p in found.items() if n.startswith("api")},
            workers={n: p for n, p in found.items() if n.startswith("worker")},
            bares={n: p for n, p in found.items() if n.startswith("bare")},
            drivers=psutil.Process(drivers.proc.pid),
        )
        owners = found
        conns = Connections(url, owners, drivers).start()
        ctx = multiprocessing.get_context("spawn")
        clients = [api_client(u) for u in api_urls]
        try:
            for r in simulated:
                drivers.start_running(Driver(r.run_id, 1, r.batch_id, r.token or ""))
            with _phase(conns, "rest, no spares"):
                time.sleep(args.warm_up)  # every driver has called in, a sweep or two ran
                figures["rest_no_spares"] = rest_window(
                    url, procs, drivers, fake, args.rest_seconds
                )

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
                figures["rest_spares"] = rest_window(url, procs, drivers, fake, args.rest_seconds)
            with _phase(conns, "rest, spares waiting, drivers silent"):
                drivers.report(False)
                time.sleep(1.0)
                figures["rest_silent"] = rest_window(url, procs, drivers, fake, args.rest_seconds)
                drivers.report(True)

            with (
                _phase(conns, "reads at concurrency 16"),
                ProcessPoolExecutor(1, mp_context=ctx) as pool,
            ):
                bares = [s.url for s in up[4:]]
                with psycopg.connect(url, autocommit=True) as conn:
                    opened, t0 = _sessions(conn), time.monotonic()
                    figures["reads"] = reads(pool, api_urls, bares, len(runs), args)
                    opened = _sessions(conn) - opened
                figures["reads_db_connections_opened_per_s"] = opened / (time.monotonic() - t0)

            with _phase(conns, "deaths"):
                figures["deaths"] = deaths(
                    url, fake, drivers, [r.run_id for r in simulated], args.deaths, 60.0
                )

            with _phase(conns, "operations"):
                picks = [quiet[i] for i in spread(min(args.operations, len(quiet)), len(quiet))]
                figures["operations"] = operations(clients, fake, picks, len(picks), 60.0)
            conns.phase = "end"
            figures["driver_requests"] = dict(drivers.counts)
            figures["driver_loop_lag"] = _stats(list(drivers.lags))
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
    windows = ("rest_no_spares", "rest_spares", "rest_silent")
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
                f"{c['simulated drivers']:.2f}",
                f"{c['bench (fake Livy, sampling)']:.2f}",
                f"{c['machine (all processes)']:.2f}",
                f"{c['rest of the machine']:.2f}",
                f"{w['channel_requests_per_s']:.0f}",
                f"{w['db_connections_opened_per_s']:.1f}",
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
                "drivers",
                "fake+bench",
                "machine",
                "rest",
                "channel req/s",
                "conns opened/s",
                "load",
            ],
        )
    )
    print(
        "backend listings (a sweep each, at most) per second, both workers: "
        + ", ".join(f"{figures[k]['listings_per_s']:.1f}" for k in windows)
    )

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
    print(
        f"\nreads at concurrency {args.concurrency} over both processes (medians of rounds; "
        f"{figures['reads_db_connections_opened_per_s']:.1f} database connections opened/s)"
    )
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
    seen, adopted = figures["death_to_seen"], figures["death_to_adopted"]
    rows = [
        ["driver death -> spare hears go", _ms(d["p50_ms"]), _ms(d["p99_ms"]), str(d["samples"])],
        ["driver death -> a worker sees it", _ms(seen["p50_ms"]), _ms(seen["p99_ms"]), ""],
        [
            "driver death -> next attempt (adopts)",
            _ms(adopted["p50_ms"]),
            _ms(adopted["p99_ms"]),
            "",
        ],
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

    lag = figures["driver_loop_lag"]
    print(
        f"the simulated drivers' own loop woke late by p50 {_ms(lag['p50_ms'])}, "
        f"p99 {_ms(lag['p99_ms'])}, max {_ms(lag['max_ms'])}"
    )

    print(
        "\nPostgreSQL connections, most open at once per process (limit: its pools), and "
        "most in use (not idle) at once"
    )
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
                f"{p['max_busy']['api']}/{p['max_busy']['worker']}",
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
                "in use: API/worker",
                "bare 1/2",
                "other",
            ],
        )
    )


def _commit() -> str | None:
    """The code measured: the checkout's commit, "+dirty" when app/ has changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "app", "tidegate_runtime"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return None
    return (head + ("+dirty" if dirty else "")) or None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1000, help="running runs")
    parser.add_argument("--waiting", type=int, default=200, help="of them with a waiting spare")
    parser.add_argument("--trigger", type=float, default=10.0, help="s between progress reports")
    parser.add_argument(
        "--directives-every",
        type=float,
        default=0.0,
        help="s between a running driver's directive reads (the runtime: 1; default 0, none)",
    )
    parser.add_argument("--warm-up", type=float, default=5.0, help="s before the first window")
    parser.add_argument(
        "--rest-seconds", type=float, default=25.0, help="each rest window (25: a long-poll each)"
    )
    parser.add_argument("--ready-timeout", type=float, default=300.0)
    parser.add_argument("--rounds", type=int, default=5, help="read rounds, interleaved")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--requests", type=int, default=3000, help="max requests per level")
    parser.add_argument("--seconds", type=float, default=4.0, help="max seconds per level")
    parser.add_argument("--deaths", type=int, default=20)
    parser.add_argument("--operations", type=int, default=20)
    parser.add_argument("--name", default="fleet", help="results file: bench/results/NAME.json")
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
    figures["death_to_adopted"] = _stats([d["death_to_adopted_s"] for d in figures["deaths"]])
    figures["stop_to_delete"] = _stats([o["stop_to_delete_s"] for o in figures["operations"]])
    figures["stop_to_succeeded"] = _stats([o["stop_to_succeeded_s"] for o in figures["operations"]])
    figures["pool_limits"] = {"api": 2 * API_POOL + 1, "worker": 2 * (WORKER_CONCURRENCY + 4) + 1}
    figures["load_avg"] = {"start": load_start, "end": load_end}
    figures["settings"] = vars(args)
    figures["commit"] = _commit()
    figures["spares_path"] = "worker-submitted spares (hot_spare), played by simulated drivers"
    report(figures, args)
    print(
        f"\nload average {load_start:.2f} at start, {load_end:.2f} at end; "
        f"code at {figures['commit']}"
    )
    save(args.name, figures)


if __name__ == "__main__":
    main()
