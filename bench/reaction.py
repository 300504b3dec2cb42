"""Reaction time: from an operation request to the worker's first backend call for it.

A real `tidegate api` and a real `tidegate worker` (default settings: fallback poll 1 s)
drive a Livy-compatible stand-in (bench/fake_livy.py) that records when each call arrives,
on this script's clock. Measured, one request at a time:

  submit: POST /jobs/{job}/submit  ->  the worker's first call to the backend (a GET /batches
          find by tag if it looks first) and its POST /batches (the submission);
  stop:   POST /jobs/{job}/stop    ->  DELETE /batches/{id}.

Baseline, in the same run: the same submit, but the operation row is inserted straight into
the database without NOTIFY, so only the fallback poll can find it.

    python bench/reaction.py [--samples 20] [--poll-samples 8]

Figures go to bench/results/reaction.json (TIDEGATE_BENCH_RESULTS=dir to write elsewhere).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    api_client,
    median,
    ms,
    percentile,
    ratio,
    save,
    scratch_database,
    serve,
    table,
    tidegate_env,
)
from bench.fake_livy import FakeLivy

# The worker's first backend call for a submit, whatever it is (a find by tag, GET /batches,
# when the worker looks before it submits; else the POST /batches itself).
BATCHES = re.compile(r"/batches(/\d+)?")
POLL_SECONDS = 1.0  # the worker's default fallback poll (tidegate worker --poll-seconds)


def _wait(fn: Any, timeout: float = 30.0, every: float = 0.005) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError("no answer in time")
        time.sleep(every)


def _finished(client: httpx.Client, op_id: int) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        op: dict[str, Any] = client.get(f"/operations/{op_id}").json()
        return op if op["state"] in ("succeeded", "failed") else None

    op: dict[str, Any] = _wait(done, 60, 0.05)
    assert op["state"] == "succeeded", op
    return op


def _job(client: httpx.Client, name: str) -> None:
    assert client.post("/jobs", json={"name": name}).status_code == 201
    body = {
        "app": {"file": "/opt/app.py"},
        "cluster": "fake",
        "queries": [{"sources": [{"name": "rate", "kind": "rate"}]}],
    }
    assert client.post(f"/jobs/{name}/versions", json=body).status_code == 201


def _submit_via_api(client: httpx.Client, fake: FakeLivy, job: str) -> tuple[float, float, int]:
    t0 = time.monotonic()
    r = client.post(f"/jobs/{job}/submit", json={"version": 1})
    assert r.status_code == 202, r.text
    find = _wait(lambda: fake.first_call(t0, None, BATCHES))
    post = _wait(lambda: fake.first_call(t0, "POST", "/batches"))
    op = _finished(client, r.json()["id"])
    return find.at - t0, post.at - t0, int(op["run_id"])


def _stop_via_api(client: httpx.Client, fake: FakeLivy, job: str) -> float:
    t0 = time.monotonic()
    r = client.post(f"/jobs/{job}/stop")
    assert r.status_code == 202, r.text
    delete = _wait(lambda: fake.first_call(t0, "DELETE", re.compile(r"/batches/\d+")))
    _finished(client, r.json()["id"])
    return float(delete.at - t0)


def _submit_via_poll(
    url: str, client: httpx.Client, fake: FakeLivy, job: str
) -> tuple[float, float]:
    """The operation row as the API writes it, minus the NOTIFY."""
    with psycopg.connect(url, autocommit=True) as conn:
        t0 = time.monotonic()
        row = conn.execute(
            "insert into operations (job_id, kind, state, params, request_hash, created_by, "
            "steps, attempts, created_at) select id, 'submit', 'pending', %s, %s, 'bench', "
            "'[]', 0, now() from jobs where name = %s returning id",
            (json.dumps({"version": 1}), "0" * 64, job),
        ).fetchone()
    assert row is not None
    find = _wait(lambda: fake.first_call(t0, None, BATCHES), 30)
    post = _wait(lambda: fake.first_call(t0, "POST", "/batches"), 30)
    _finished(client, int(row[0]))
    return find.at - t0, post.at - t0


def _stats(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": percentile(values, 50) * 1000,
        "p99_ms": percentile(values, 99) * 1000,
        "median_ms": median(values) * 1000,
        "samples": len(values),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=20, help="submit+stop pairs via the API")
    parser.add_argument("--poll-samples", type=int, default=8, help="submits found by polling")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="tidegate-bench-reaction-"))
    fake = FakeLivy().start()
    results: dict[str, list[float]] = {
        "notify_find": [],
        "notify_submit": [],
        "notify_stop": [],
        "poll_find": [],
        "poll_submit": [],
    }
    try:
        with scratch_database("tidegate_bench_reaction") as url:
            env = tidegate_env(url, tmp)
            with (
                serve(
                    ["-m", "app.cli", "api", "--no-migrate"], env, tmp / "api.log", "/healthz"
                ) as api,
                serve(
                    ["-m", "app.cli", "worker"],
                    {**env, "TIDEGATE_PUBLIC_URL": api.url},
                    tmp / "worker.log",
                    None,
                ),
            ):
                client = api_client(api.url)
                r = client.post("/clusters", json={"name": "fake", "kind": "livy", "url": fake.url})
                assert r.status_code == 201, r.text
                for i in range(args.samples + args.poll_samples):
                    _job(client, f"r{i}")
                time.sleep(2 * POLL_SECONDS)  # the worker is up and waiting
                for i in range(args.samples):
                    find, post, _ = _submit_via_api(client, fake, f"r{i}")
                    results["notify_find"].append(find)
                    results["notify_submit"].append(post)
                    results["notify_stop"].append(_stop_via_api(client, fake, f"r{i}"))
                for i in range(args.samples, args.samples + args.poll_samples):
                    find, post = _submit_via_poll(url, client, fake, f"r{i}")
                    results["poll_find"].append(find)
                    results["poll_submit"].append(post)
    finally:
        fake.stop()

    figures = {k: _stats(v) for k, v in results.items()}
    rows = []
    for label, key in (
        ("submit -> first backend call", "notify_find"),
        ("submit -> POST /batches", "notify_submit"),
        ("stop -> DELETE /batches/{id}", "notify_stop"),
        ("baseline: poll only -> find", "poll_find"),
        ("baseline: poll only -> POST /batches", "poll_submit"),
    ):
        f = figures[key]
        rows.append([label, ms(f["p50_ms"] / 1000), ms(f["p99_ms"] / 1000), str(f["samples"])])
    print(table(rows, ["from request to", "p50", "p99", "n"]))
    nf, pf = figures["notify_find"]["p50_ms"], figures["poll_find"]["p50_ms"]
    print(
        f"\nLISTEN/NOTIFY p50 {nf:.1f} ms vs poll-only p50 {pf:.1f} ms: {ratio(nf, pf)}; "
        f"vs the {POLL_SECONDS:.0f} s poll interval: {ratio(nf / 1000, POLL_SECONDS)}"
    )
    figures["poll_seconds"] = POLL_SECONDS  # type: ignore[assignment]
    figures["notify_vs_poll_p50_ratio"] = nf / pf if pf else None  # type: ignore[assignment]
    save("reaction", figures)


if __name__ == "__main__":
    main()
