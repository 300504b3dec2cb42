"""One Prometheus scrape of GET /metrics with 1,000 jobs, against two baselines measured in the
same run: GET /healthz of the same server (the HTTP floor) and GET /metrics of a second
server whose store is empty (0 jobs: the fixed cost of the exposition).

Every job has a running current run with a progress report per query (4 partitions behind
their latest offsets, a watermark, state operators), 10 stored progress reports per query,
6 transitions (2 supervised restarts), 5 finished operations and, for one job in 50, a
pending one; 3 workers beat. The data is written with SQL (filling is not what is measured).
Rounds alternate the three requests; medians of the rounds are reported with their spread.

    python bench/metrics.py [--jobs 1000] [--rounds 5] [--samples 10]

Figures go to bench/results/metrics.json (TIDEGATE_BENCH_RESULTS=dir to write elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg
from psycopg import sql
from sqlalchemy import make_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import seed
from bench.common import (
    ADMIN_TOKEN,
    Server,
    drop_database,
    median,
    on_database,
    percentile,
    ratio,
    save,
    scratch_database,
    serve,
    server_url,
    table,
    tidegate_env,
)

QUERIES = [
    {
        "name": name,
        "sources": [{"name": "events", "kind": "eventlog", "options": {"stream": "s"}}],
        "stateful_operators": [{"kind": "tumbling_window"}],
        "output_mode": "append",
        "trigger": "15 SECONDS",
        "partitioned_on": [],
    }
    for name in ("counts", "enrich")
]

PROGRESS = """
jsonb_build_object(
  'query', q, 'batch_id', b, 'timestamp', to_char((now() - make_interval(secs => 15 * (10 - b)))
      at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
  'num_input_rows', 1500, 'watermark', to_char((now() - interval '2 minutes')
      at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
  'sources', jsonb_build_array(jsonb_build_object(
      'description', 'eventlog', 'start_offset', jsonb_build_object('0', b, '1', b, '2', b, '3', b),
      'end_offset', jsonb_build_object('0', 100 * b, '1', 100 * b, '2', 100 * b, '3', 100 * b),
      'latest_offset', jsonb_build_object('0', 120 * b, '1', 110 * b, '2', 100 * b, '3', 130 * b),
      'num_input_rows', 1500)),
  'state_operators', jsonb_build_array(jsonb_build_object(
      'operator_name', 'stateStoreSave', 'num_rows_total', 5000, 'memory_used_bytes', 1048576)),
  'durations_ms', jsonb_build_object('triggerExecution', 900, 'addBatch', 700))
"""


def fill(url: str, jobs: int) -> None:
    """``jobs`` jobs with a running run each, its progress, transitions and operations."""
    cluster_id = seed.cluster(url)
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
            "created_by, created_at, updated_at, running_since) "
            "select j.id, v.id, 'running', 2, 0, '{}', 'bench', now() - interval '1 hour', "
            "now(), now() - interval '10 minutes' "
            "from jobs j join job_versions v on v.job_id = j.id"
        )
        conn.execute("update jobs j set current_run_id = r.id from runs r where r.job_id = j.id")
        conn.execute(
            f"insert into query_progress (run_id, query, batch_id, at, payload) "
            f"select r.id, q, b, now() - make_interval(secs => 15 * (10 - b)), {PROGRESS} "
            f"from runs r cross join unnest(array['counts', 'enrich']) q "
            f"cross join generate_series(1, 10) b"
        )
        conn.execute(
            "update runs r set progress = (select jsonb_object_agg(p.query, p.payload) "
            "from query_progress p where p.run_id = r.id and p.batch_id = 10)"
        )
        conn.execute(
            "insert into run_transitions (run_id, at, from_state, to_state, reason) "
            "select r.id, now(), t.f, t.t, 'bench' from runs r cross join (values "
            "(null, 'submitting'), ('submitting', 'running'), ('running', 'restarting'), "
            "('restarting', 'submitting'), ('running', 'restarting'), "
            "('restarting', 'submitting')) as t(f, t)"
        )
        conn.execute(
            "insert into operations (job_id, kind, state, params, request_hash, run_id, steps, "
            "attempts, created_by, created_at, started_at, finished_at) "
            "select j.id, (array['submit', 'stop', 'restart', 'snapshot', 'drain'])[k], "
            "case when k = 5 then 'failed' else 'succeeded' end, '{}', 'h', j.current_run_id, "
            "'[]', 1, 'bench', now() - interval '2 hours', now() - interval '2 hours', "
            "now() - interval '2 hours' + make_interval(secs => k * 7) "
            "from jobs j cross join generate_series(1, 5) k"
        )
        conn.execute(
            "insert into operations (job_id, kind, state, params, request_hash, steps, "
            "attempts, created_by, created_at) select id, 'stop', 'pending', '{}', 'h', '[]', "
            "0, 'bench', now() from jobs where id % 50 = 0"
        )
        conn.execute(
            "insert into worker_heartbeats (worker_id, started_at, heartbeat_at, every_seconds, "
            "lease_renewals, stopped_at) select 'w' || i, now(), now(), 10, 100 * i, null "
            "from generate_series(1, 3) i"
        )
        for t in ("jobs", "runs", "query_progress", "run_transitions", "operations"):
            conn.execute(f"analyze {t}")


@contextmanager
def empty_copy(url: str) -> Iterator[str]:
    """A copy of the freshly migrated database ``url`` (before it is filled): the 0-job
    store, without a second migration run."""
    source = make_url(url).database
    name = f"{source}_empty"
    server = server_url()
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            sql.SQL("create database {} template {}").format(
                sql.Identifier(name), sql.Identifier(source)
            )
        )
    try:
        yield on_database(server, name)
    finally:
        drop_database(server, name)


@contextmanager
def started(*servers: AbstractContextManager[Server]) -> Iterator[list[Server]]:
    """Start several servers at once (each waits for its own readiness), stop them all."""
    with ExitStack() as stack, ThreadPoolExecutor(len(servers)) as pool:
        futures = [pool.submit(cm.__enter__) for cm in servers]
        error: BaseException | None = None
        for cm, future in zip(servers, futures, strict=True):
            try:
                future.result()
                stack.push(cm)
            except BaseException as exc:  # stop the others, then raise the first failure
                error = error or exc
        if error is not None:
            raise error
        yield [f.result() for f in futures]


def sample(client: httpx.Client, server: Server, path: str, n: int) -> tuple[list[float], float]:
    """``n`` sequential requests: their latencies, and the server process's CPU seconds per
    request (user + system; a figure the machine's load moves much less than latency)."""
    proc = psutil.Process(server.proc.pid)
    before = sum(proc.cpu_times()[:2])
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = client.get(path)
        out.append(time.perf_counter() - t0)
        r.raise_for_status()
    return out, (sum(proc.cpu_times()[:2]) - before) / n


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=10, help="sequential requests per round")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="tidegate-bench-metrics-"))
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    api = ["-m", "app.cli", "api", "--no-migrate"]
    with scratch_database("tidegate_bench_metrics") as url, empty_copy(url) as empty_url:
        t0 = time.perf_counter()
        fill(url, args.jobs)
        print(f"seeded {args.jobs} jobs in {time.perf_counter() - t0:.1f}s")
        with (
            started(
                serve(api, tidegate_env(url, tmp), tmp / "api.log", "/healthz"),
                serve(api, tidegate_env(empty_url, tmp / "empty"), tmp / "empty.log", "/healthz"),
            ) as (tg, empty),
            httpx.Client(base_url=tg.url, headers=headers, timeout=60) as full_client,
            httpx.Client(base_url=empty.url, headers=headers, timeout=60) as empty_client,
        ):
            body = full_client.get("/metrics").text
            series = [line for line in body.splitlines() if line and not line.startswith("#")]
            process = ("python_", "process_", "tidegate_http")
            store = [s for s in series if not s.startswith(process)]
            assert any(s.startswith("tidegate_query_source_backlog_records{") for s in series)
            cases = {
                f"GET /metrics ({args.jobs} jobs)": lambda n: sample(
                    full_client, tg, "/metrics", n
                ),
                "GET /metrics (0 jobs)": lambda n: sample(empty_client, empty, "/metrics", n),
                "GET /healthz": lambda n: sample(full_client, tg, "/healthz", n),
            }
            for fn in cases.values():  # warm-up: connections, caches, plans
                fn(3)
            rounds: dict[str, list[list[float]]] = {name: [] for name in cases}
            cpu: dict[str, list[float]] = {name: [] for name in cases}
            for _ in range(args.rounds):  # interleaved, so load drifts hit all three alike
                for name, fn in cases.items():
                    latencies, cpu_each = fn(args.samples)
                    rounds[name].append(latencies)
                    cpu[name].append(cpu_each)
            collect = [
                float(line.split()[-1])
                for line in full_client.get("/metrics").text.splitlines()
                if line.startswith("tidegate_metrics_collect_seconds ")
            ]
    load_end = os.getloadavg()[0]

    figures: dict[str, Any] = {
        "jobs": args.jobs,
        "series": len(series),
        "store_series": len(store),
        "bytes": len(body.encode()),
        "collect_seconds": collect[0] if collect else None,
        "load_avg": {"start": load_start, "end": load_end},
        "settings": vars(args),
        "requests": {},
    }
    for name, per_round in rounds.items():
        medians = [median(r) for r in per_round]
        every = [x for r in per_round for x in r]
        figures["requests"][name] = {
            "p50_ms": median(medians) * 1000,
            "p90_ms": percentile(every, 90) * 1000,
            "spread_ms": [min(medians) * 1000, max(medians) * 1000],
            "api_cpu_ms": median(cpu[name]) * 1000,
        }
    metrics = figures["requests"][f"GET /metrics ({args.jobs} jobs)"]["p50_ms"]
    empty_p50 = figures["requests"]["GET /metrics (0 jobs)"]["p50_ms"]
    health = figures["requests"]["GET /healthz"]["p50_ms"]
    figures["ratio_vs_empty_scrape"] = metrics / empty_p50
    figures["ratio_vs_healthz"] = metrics / health
    print(
        f"\nGET /metrics: {args.rounds} rounds x {args.samples} sequential requests, "
        f"interleaved; load average {load_start:.1f} at start, {load_end:.1f} at end "
        f"({os.cpu_count()} cores)"
    )
    rows = [
        [
            name,
            f"{f['p50_ms']:.1f} ms",
            f"{f['p90_ms']:.1f} ms",
            f"{f['spread_ms'][0]:.1f}-{f['spread_ms'][1]:.1f} ms",
            ratio(f["p50_ms"], empty_p50),
            ratio(f["p50_ms"], health),
            f"{f['api_cpu_ms']:.1f} ms",
        ]
        for name, f in figures["requests"].items()
    ]
    print(
        table(
            rows,
            [
                "request",
                "p50",
                "p90",
                "round medians",
                "vs 0-job scrape",
                "vs /healthz",
                "API CPU/request",
            ],
        )
    )
    print(
        f"\none scrape: {len(series)} series ({len(store)} from the store), "
        f"{figures['bytes'] / 1024:.0f} KiB; store queries took "
        f"{(figures['collect_seconds'] or 0) * 1000:.1f} ms"
    )
    save("metrics", figures)


if __name__ == "__main__":
    main()
