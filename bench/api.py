"""API throughput and latency against a bare-FastAPI baseline, then list latency as the data
grows.

Part 1: reads (GET /jobs/{job}, GET /jobs, GET /snapshots) and writes (PUT
/jobs/{job}/startpoints, one upsert each) at concurrency 1, 16 and 64 against `tidegate api`
(a separate process, JSON logs at INFO, pool of 10: the production defaults) and against
bench/baseline_app.py (one psycopg query per request, the same uvicorn settings, the same
database). Rounds alternate between the two; medians of the rounds are reported, with
tidegate/baseline ratios.

Part 2: the data grows (default 1k -> 10k -> 30k jobs, 100k startpoints, as many snapshots
as jobs; --full: 1k -> 10k -> 100k jobs, 1M startpoints, 100k snapshots) and the latency of
the first page, a deep page (keyset cursor), a state-filtered page, one job, one job's
startpoints, and the first and a deep page of snapshots is measured at each size: flat means
the indexes and the keyset pagination do their work.

    python bench/api.py            # a few minutes
    python bench/api.py --full     # the sizes of the issue
    python bench/api.py --sizes 50,100 --concurrency 1,4 --rounds 1 --requests 20 \
        --seconds 0.5 --samples 3    # smoke size (tests/bench), seconds

Figures go to bench/results/api.json (TIDEGATE_BENCH_RESULTS=dir to write elsewhere).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import seed
from bench.common import (
    ADMIN_TOKEN,
    Load,
    median,
    ms,
    ratio,
    run_load,
    save,
    scratch_database,
    serve,
    table,
    tidegate_env,
)

WRITERS = 64
KAFKA = {"name": "clicks", "kind": "kafka", "options": {"topic": "clicks"}}


def _scenarios(jobs: int) -> dict[str, tuple[Any, Any]]:
    """name -> (tidegate request, baseline request); each takes (client, index)."""

    def job(i: int) -> str:
        return f"job-{(i * 7919) % jobs:07d}"

    def put_body(i: int) -> dict[str, Any]:
        return {
            "startpoints": [{"source": "clicks", "partition": i % 8, "type": "OFFSET", "value": i}]
        }

    return {
        "GET /jobs/{job}": (
            lambda c, i: c.get(f"/api/v1/jobs/{job(i)}"),
            lambda c, i: c.get(f"/baseline/jobs/{job(i)}"),
        ),
        "GET /jobs (page of 50)": (
            lambda c, i: c.get("/api/v1/jobs", params={"limit": 50}),
            lambda c, i: c.get("/baseline/jobs", params={"limit": 50}),
        ),
        "GET /snapshots (page of 50)": (
            lambda c, i: c.get("/api/v1/snapshots", params={"limit": 50}),
            lambda c, i: c.get("/baseline/snapshots", params={"limit": 50}),
        ),
        "PUT /jobs/{job}/startpoints": (
            lambda c, i: c.put(f"/api/v1/jobs/w-{i % WRITERS:07d}/startpoints", json=put_body(i)),
            lambda c, i: c.put(f"/baseline/jobs/w-{i % WRITERS:07d}/startpoints", json=put_body(i)),
        ),
    }


def _level(
    url: str, request: Any, concurrency: int, requests: int, seconds: float, auth: bool
) -> Load:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"} if auth else None
    run_load(url, request, concurrency=concurrency, max_requests=20, max_seconds=2, headers=headers)
    return run_load(
        url,
        request,
        concurrency=concurrency,
        max_requests=requests,
        max_seconds=seconds,
        headers=headers,
    )


def throughput(tg: str, base: str, jobs: int, args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (tg_request, base_request) in _scenarios(jobs).items():
        rows = []
        out[name] = {}
        for concurrency in args.concurrency:
            runs: dict[str, list[Load]] = {"tidegate": [], "baseline": []}
            for _ in range(args.rounds):
                runs["tidegate"].append(
                    _level(tg, tg_request, concurrency, args.requests, args.seconds, True)
                )
                runs["baseline"].append(
                    _level(base, base_request, concurrency, args.requests, args.seconds, False)
                )
            fig = {
                who: {
                    "rps": median([r.rps for r in loads]),
                    "p50_ms": median([r.p50 for r in loads]) * 1000,
                    "p99_ms": median([r.p99 for r in loads]) * 1000,
                    "requests": sum(r.requests for r in loads),
                    "errors": sum(r.errors for r in loads),
                }
                for who, loads in runs.items()
            }
            t, b = fig["tidegate"], fig["baseline"]
            fig["ratio"] = {
                "rps": t["rps"] / b["rps"] if b["rps"] else None,
                "p50": t["p50_ms"] / b["p50_ms"] if b["p50_ms"] else None,
            }
            out[name][str(concurrency)] = fig
            rows.append(
                [
                    str(concurrency),
                    f"{t['rps']:.0f}",
                    f"{t['p50_ms']:.1f}",
                    f"{t['p99_ms']:.1f}",
                    f"{b['rps']:.0f}",
                    f"{b['p50_ms']:.1f}",
                    f"{b['p99_ms']:.1f}",
                    ratio(t["rps"], b["rps"]),
                    ratio(t["p50_ms"], b["p50_ms"]),
                    str(t["errors"] + b["errors"]),
                ]
            )
        print(f"\n{name}")
        print(
            table(
                rows,
                [
                    "conc",
                    "tg req/s",
                    "tg p50",
                    "tg p99",
                    "base req/s",
                    "base p50",
                    "base p99",
                    "req/s ratio",
                    "p50 ratio",
                    "errors",
                ],
            )
        )
    return out


def _sequential(client: httpx.Client, path: str, params: Any, n: int) -> float:
    """Median latency of ``n`` sequential GETs (after two warm-ups)."""
    times = []
    for i in range(n + 2):
        p = params(i) if callable(params) else params
        t0 = time.perf_counter()
        r = client.get(path(i) if callable(path) else path, params=p)
        elapsed = time.perf_counter() - t0
        assert r.status_code == 200, (path, r.status_code, r.text[:300])
        if i >= 2:
            times.append(elapsed)
    return median(times)


def _deep_cursor(url: str) -> tuple[str, str]:
    """A cursor 90% of the way through the jobs (what next_cursor would hold there)."""
    from app.core.pagination import encode_cursor

    with psycopg.connect(url) as conn:
        (count,) = conn.execute("select count(*) from jobs where name like 'job-%'").fetchone()  # type: ignore[misc]
        (name,) = conn.execute(
            "select name from jobs where name like 'job-%%' order by name offset %s limit 1",
            (int(count * 0.9),),
        ).fetchone()  # type: ignore[misc]
    return encode_cursor(name), name


def _deep_snapshot_cursor(url: str) -> tuple[str, int]:
    """A snapshots cursor 90% of the way through (newest first): what next_cursor holds."""
    from app.core.pagination import encode_cursor

    with psycopg.connect(url) as conn:
        (count,) = conn.execute("select count(*) from snapshots").fetchone()  # type: ignore[misc]
        (sid,) = conn.execute(
            "select id from snapshots order by id desc offset %s limit 1", (int(count * 0.9),)
        ).fetchone()  # type: ignore[misc]
    return encode_cursor(sid), int(sid)


def _plans(url: str) -> dict[str, str]:
    """The access path PostgreSQL picks for each list query at this size."""
    queries = {
        "jobs page": "select * from jobs where name > 'job-0900000' order by name limit 51",
        "jobs by state": "select * from jobs where state = 'running' and name > 'job-0900000' "
        "order by name limit 51",
        "job by name": "select * from jobs where name = 'job-0000042'",
        "latest version": "select max(number) from job_versions where job_id = 42",
        "startpoints of a job": "select * from startpoints where job_id = 42 "
        "order by source, partition nulls first",
        "snapshots page": "select * from snapshots where id < 1000 order by id desc limit 51",
    }
    out = {}
    with psycopg.connect(url) as conn:
        for name, query in queries.items():
            plan = conn.execute("explain (format json) " + query).fetchone()[0][0]["Plan"]  # type: ignore[index]
            nodes = []
            stack = [plan]
            while stack:
                node = stack.pop()
                nodes.append(
                    node["Node Type"]
                    + (f" on {node['Index Name']}" if "Index Name" in node else "")
                )
                stack.extend(node.get("Plans", []))
            out[name] = " > ".join(nodes)
    return out


def _query_count(url: str, path: str) -> int:
    """SQL statements one GET ``path``?limit=50 executes (in process, same code)."""
    from fastapi.testclient import TestClient
    from sqlalchemy import event

    from app.api.main import create_app
    from app.core.config import Settings
    from app.core.db import make_engine

    engine = make_engine(url, pool_size=2)
    count = 0

    def counter(*_: Any) -> None:
        nonlocal count
        count += 1

    event.listen(engine, "before_cursor_execute", counter)
    app = create_app(
        Settings(database_url=url, admin_token=ADMIN_TOKEN, log_json=False), engine=engine
    )  # type: ignore[arg-type]
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        client.get(path, params={"limit": 50})
        count = 0
        assert client.get(path, params={"limit": 50}).status_code == 200
    engine.dispose()
    return count


def _random_job_paths(size: int) -> tuple[Any, Any]:
    rng = random.Random(size)
    return (
        lambda i: f"/jobs/job-{rng.randrange(size):07d}",
        lambda i: f"/jobs/job-{rng.randrange(size):07d}/startpoints",
    )


def _snapshots_at(size: int, args: argparse.Namespace) -> int:
    """Snapshots at a growth size: ``args.snapshots`` at the largest, in proportion before."""
    return max(1, args.snapshots * size // args.sizes[-1])


def growth(tg: str, base: str, url: str, args: argparse.Namespace) -> dict[str, Any]:
    sizes = args.sizes
    per_job = max(1, args.startpoints // sizes[-1])
    rows, out = [], {}
    first: dict[str, float] = {}
    done = sizes[0]  # main() seeded the first size
    client = httpx.Client(
        base_url=tg + "/api/v1", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=60
    )
    bare = httpx.Client(base_url=base, timeout=60)
    for size in sizes:
        t0 = time.monotonic()
        if size > done:
            seed.jobs(url, done, size)
            done = size
        added = seed.startpoints(url, per_job)
        snaps_added = seed.snapshots(url, _snapshots_at(size, args))
        with psycopg.connect(url) as conn:
            (sp_total,) = conn.execute("select count(*) from startpoints").fetchone()  # type: ignore[misc]
            (snap_total,) = conn.execute("select count(*) from snapshots").fetchone()  # type: ignore[misc]
        took = time.monotonic() - t0
        print(
            f"\n{size} jobs, {sp_total} startpoints (+{added}), {snap_total} snapshots "
            f"(+{snaps_added}; seeded in {took:.0f}s)"
        )
        cursor, after = _deep_cursor(url)
        snap_cursor, snap_before = _deep_snapshot_cursor(url)
        n = args.samples
        one, its_startpoints = _random_job_paths(size)
        lat = {
            "first page": _sequential(client, "/jobs", {"limit": 50}, n),
            "deep page (cursor)": _sequential(client, "/jobs", {"limit": 50, "cursor": cursor}, n),
            "filtered by state": _sequential(client, "/jobs", {"limit": 50, "state": "running"}, n),
            "one job": _sequential(client, one, None, n),
            "a job's startpoints": _sequential(client, its_startpoints, None, n),
            "baseline deep page": _sequential(
                bare, "/baseline/jobs", {"limit": 50, "after": after}, n
            ),
            "snapshots first page": _sequential(client, "/snapshots", {"limit": 50}, n),
            "snapshots deep page (cursor)": _sequential(
                client, "/snapshots", {"limit": 50, "cursor": snap_cursor}, n
            ),
            "baseline snapshots first page": _sequential(
                bare, "/baseline/snapshots", {"limit": 50}, n
            ),
            "baseline snapshots deep page": _sequential(
                bare, "/baseline/snapshots", {"limit": 50, "before": snap_before}, n
            ),
        }
        first = first or lat
        out[str(size)] = {
            "jobs": size,
            "startpoints": sp_total,
            "snapshots": snap_total,
            "median_ms": {k: v * 1000 for k, v in lat.items()},
            "plans": _plans(url),
        }
        for name, value in lat.items():
            rows.append([f"{size}", name, ms(value), ratio(value, first[name])])
    print("\nlatency as the data grows (median of sequential requests; ratio to the smallest size)")
    print(table(rows, ["jobs", "request", "median", "vs smallest"]))
    print("\naccess paths at the largest size:")
    for name, plan in out[str(sizes[-1])]["plans"].items():
        print(f"  {name:22} {plan}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--full", action="store_true", help="1k -> 100k jobs, 1M startpoints")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--requests", type=int, default=600, help="max requests per level")
    parser.add_argument("--seconds", type=float, default=3.0, help="max seconds per level")
    parser.add_argument("--samples", type=int, default=40, help="sequential requests per size")
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=None)
    parser.add_argument("--startpoints", type=int, default=None)
    parser.add_argument(
        "--snapshots", type=int, default=None, help="snapshots at the largest size (= jobs)"
    )
    parser.add_argument(
        "--concurrency",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[1, 16, 64],
        help="load levels, e.g. 1,16,64",
    )
    args = parser.parse_args()
    if args.full:
        args.rounds = max(args.rounds, 3)
    args.sizes = args.sizes or ([1_000, 10_000, 100_000] if args.full else [1_000, 10_000, 30_000])
    args.startpoints = args.startpoints or (1_000_000 if args.full else 100_000)
    args.snapshots = args.snapshots or args.sizes[-1]

    tmp = Path(tempfile.mkdtemp(prefix="tidegate-bench-api-"))
    with scratch_database("tidegate_bench_api") as url:
        cluster_id = seed.cluster(url)
        seed.jobs(url, 0, WRITERS, prefix="w")
        seed.versions(url, [f"w-{i:07d}" for i in range(WRITERS)], cluster_id, KAFKA)
        seed.jobs(url, 0, args.sizes[0])
        seed.snapshots(url, _snapshots_at(args.sizes[0], args))
        env = tidegate_env(url, tmp)
        with (
            serve(["-m", "app.cli", "api", "--no-migrate"], env, tmp / "api.log", "/healthz") as tg,
            serve(["bench/baseline_app.py"], env, tmp / "baseline.log", "/healthz") as base,
        ):
            print(f"tidegate api {tg.url}, baseline {base.url}, database {url.rsplit('/', 1)[-1]}")
            figures: dict[str, Any] = {
                "throughput": throughput(tg.url, base.url, args.sizes[0], args)
            }
            figures["list_query_count"] = _query_count(url, "/api/v1/jobs")
            figures["snapshots_query_count"] = _query_count(url, "/api/v1/snapshots")
            print(f"\nSQL statements for one GET /jobs?limit=50: {figures['list_query_count']}")
            print(
                "SQL statements for one GET /snapshots?limit=50: "
                f"{figures['snapshots_query_count']}"
            )
            figures["growth"] = growth(tg.url, base.url, url, args)
        figures["settings"] = {k: v for k, v in vars(args).items()}
    save("api", figures)


if __name__ == "__main__":
    main()
