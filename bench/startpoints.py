"""Bulk startpoints: 10,000 partition startpoints upserted in one PUT, and their preview,
against the same rows written with psycopg COPY (the fastest way PostgreSQL takes rows) in
the same run. The source is a real event log with 10,000 partitions, so the API checks each
partition number and the preview reads every partition's positions, as in production.

    python bench/startpoints.py [--partitions 10000] [--rounds 5]

Figures go to bench/results/startpoints.json (TIDEGATE_BENCH_RESULTS=dir to write elsewhere).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    api_client,
    median,
    ms,
    ratio,
    save,
    scratch_database,
    serve,
    table,
    tidegate_env,
)
from tidegate_runtime.sources.eventlog import EventLog


def _copy(url: str, job_id: int, partitions: int) -> float:
    """The baseline: replace the job's startpoints with the same rows, by COPY."""
    with psycopg.connect(url) as conn:
        conn.execute("delete from startpoints where job_id = %s", (job_id,))
        conn.commit()
        t0 = time.perf_counter()
        with (
            conn.cursor() as cur,
            cur.copy(
                "copy startpoints (job_id, source, partition, type, value, state, created_by, "
                "created_at, updated_at) from stdin"
            ) as copy,
        ):
            for p in range(partitions):
                copy.write_row((job_id, "clicks", p, "OFFSET", 0, "pending", "bench", "now", "now"))
        conn.commit()
        return time.perf_counter() - t0


def _select(url: str, job_id: int) -> float:
    """Reading the same rows back with one query (what any preview must at least do)."""
    with psycopg.connect(url) as conn:
        t0 = time.perf_counter()
        rows = conn.execute(
            "select id, source, partition, type, value from startpoints where job_id = %s "
            "order by source, partition",
            (job_id,),
        ).fetchall()
        assert rows
        return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    n = args.partitions

    tmp = Path(tempfile.mkdtemp(prefix="tidegate-bench-startpoints-"))
    t0 = time.monotonic()
    EventLog(tmp / "log").create_stream("clicks", n)
    print(f"event log with {n} partitions created in {time.monotonic() - t0:.0f}s")
    body = {
        "startpoints": [
            {"source": "clicks", "partition": p, "type": "OFFSET", "value": 0} for p in range(n)
        ]
    }
    put, preview, copy, select = [], [], [], []
    with scratch_database("tidegate_bench_startpoints") as url:
        env = tidegate_env(url, tmp)
        with serve(
            ["-m", "app.cli", "api", "--no-migrate"], env, tmp / "api.log", "/healthz"
        ) as api:
            client = api_client(api.url)
            assert (
                client.post(
                    "/clusters", json={"name": "c", "kind": "livy", "url": "http://127.0.0.1:9"}
                ).status_code
                == 201
            )
            assert client.post("/jobs", json={"name": "wide"}).status_code == 201
            version = {
                "app": {"file": "/opt/app.py"},
                "cluster": "c",
                "queries": [
                    {
                        "name": "q",
                        "sources": [
                            {
                                "name": "clicks",
                                "kind": "eventlog",
                                "options": {"root": str(tmp / "log"), "stream": "clicks"},
                            }
                        ],
                    }
                ],
            }
            assert client.post("/jobs/wide/versions", json=version).status_code == 201
            with psycopg.connect(url) as conn:
                (job_id,) = conn.execute("select id from jobs where name = 'wide'").fetchone()  # type: ignore[misc]
            for _ in range(args.rounds):  # alternate, so drift hits both sides alike
                copy.append(_copy(url, job_id, n))
                t = time.perf_counter()
                r = client.put("/jobs/wide/startpoints", json=body)
                put.append(time.perf_counter() - t)
                assert r.status_code == 200 and r.json()["upserted"] == n, r.text[:300]
                t = time.perf_counter()
                r = client.post("/jobs/wide/startpoints/preview")
                preview.append(time.perf_counter() - t)
                assert r.status_code == 200 and len(r.json()["rows"]) == n, r.text[:300]
                select.append(_select(url, job_id))

    figures = {
        "partitions": n,
        "rounds": args.rounds,
        "put_ms": median(put) * 1000,
        "preview_ms": median(preview) * 1000,
        "copy_ms": median(copy) * 1000,
        "select_ms": median(select) * 1000,
        "put_vs_copy_ratio": median(put) / median(copy),
        "preview_vs_copy_ratio": median(preview) / median(copy),
    }
    rows = [
        [f"PUT {n} startpoints (one request)", ms(median(put)), ratio(median(put), median(copy))],
        [f"POST preview of {n}", ms(median(preview)), ratio(median(preview), median(copy))],
        ["baseline: COPY of the same rows", ms(median(copy)), "1.00x"],
        ["(one SELECT of the same rows)", ms(median(select)), ratio(median(select), median(copy))],
    ]
    print(table(rows, ["what", "median", "vs COPY"]))
    save("startpoints", figures)


if __name__ == "__main__":
    main()
