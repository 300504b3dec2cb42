"""Drain overhead: how long a drain takes against the backlog it must work off, next to the
time the same pipeline takes to process that backlog normally, measured in the same run.

    .venv/bin/python bench/drain.py                 # backlogs 0, 10k, 100k records
    .venv/bin/python bench/drain.py --full          # and 1M
    .venv/bin/python bench/drain.py --sizes 0,50000 --reps 3

The pipeline is pipelines/windowed_counts.py (one-minute windows, append mode, 1-second
trigger) on tidegate's local Livy-compatible runner (``local[2]``), with a real API and worker.
Per backlog size and repetition, on a job of its own that has caught up with its input:

1. **normal**: hold the source (its control file, as the runtime writes it when stopping),
   append N records (2 partitions), release it, and time until the query's reported
   progress reaches the end of the log;
2. **drain**: hold, append N more records, then time from ``POST /jobs/{job}/drain`` until
   the operation has succeeded: every record up to the end offsets processed, the marker
   batch, the batch that emits the last windows, the stop and the driver's exit (the
   drain's first step replaces the hold with its cap).

Both start the clock with the whole backlog waiting. The ratio drain/normal is the drain's
overhead; with no backlog it is the fixed cost of a drain (marker, flush batch, stop).
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    ROOT,
    api_client,
    free_port,
    median,
    save,
    scratch_database,
    serve,
    table,
    tidegate_env,
)
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_producer import produce

PIPELINE = ROOT / "pipelines" / "windowed_counts.py"
CONF = {
    "spark.driver.memory": "1g",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
}
T0 = 1_767_225_600_000


def _wait(fn: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f}s")
        time.sleep(every)


class Bench:
    def __init__(self, api: httpx.Client, tmp: Path) -> None:
        self.api, self.tmp = api, tmp
        self.jobs = 0

    def operate(self, job: str, verb: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        r = self.api.post(f"/jobs/{job}/{verb}", json=body)
        assert r.status_code == 202, r.text
        op_id = r.json()["id"]
        op: dict[str, Any] = _wait(
            lambda: (
                (o := self.api.get(f"/operations/{op_id}").json())["state"]
                in ("succeeded", "failed")
                and o
            ),
            3600,
            f"{verb} {job}",
            every=0.05,
        )
        assert op["state"] == "succeeded", op
        return op

    def caught_up(self, run_id: int, root: Path) -> Callable[[], bool]:
        latest = {str(p): o for p, o in EventLog(root).stream("clicks").latest_offsets().items()}

        def check() -> bool:
            run = self.api.get(f"/runs/{run_id}").json()
            progress = run["progress"].get("windowed_counts") or {}
            return bool((progress.get("sources") or [{}])[0].get("end_offset") == latest)

        return check

    def running_job(self) -> tuple[str, Path, int]:
        """A fresh windowed job that has read its first records."""
        self.jobs += 1
        job, root = f"drain-bench-{self.jobs}", self.tmp / f"log-{self.jobs}"
        EventLog(root).create_stream("clicks", 2)
        produce(str(root), "clicks", 2, rate=0, count=200, start_ts_ms=T0, ts_step_ms=10)
        assert self.api.post("/jobs", json={"name": job}).status_code == 201
        body = {
            "app": {
                "file": str(PIPELINE),
                "args": [
                    "--root",
                    str(root),
                    "--stream",
                    "clicks",
                    "--output",
                    str(self.tmp / f"out-{self.jobs}"),
                ],
            },
            "cluster": "runner",
            "conf": CONF,
            "queries": [
                {
                    "name": "windowed_counts",
                    "sources": [
                        {
                            "name": "clicks",
                            "kind": "eventlog",
                            "options": {"root": str(root), "stream": "clicks"},
                        }
                    ],
                    "stateful_operators": [{"kind": "tumbling_window"}],
                    "output_mode": "append",
                    "trigger": "1 SECONDS",
                }
            ],
        }
        assert self.api.post(f"/jobs/{job}/versions", json=body).status_code == 201
        run_id = int(self.operate(job, "submit", {"version": 1})["run_id"])
        _wait(self.caught_up(run_id, root), 600, "first records")
        return job, root, run_id

    def append(self, root: Path, count: int, at_ms: int) -> float:
        start = time.monotonic()
        if count:
            produce(str(root), "clicks", 2, rate=0, count=count, start_ts_ms=at_ms, ts_step_ms=1)
        return time.monotonic() - start

    def hold(self, job: str, run_id: int, on: bool) -> None:
        """Pause reading (the source's control file, as the runtime writes it when stopping),
        so the whole backlog is waiting when the clock starts, however long the write took."""
        control = self.tmp / "checkpoints" / job / str(run_id) / "_control" / "clicks.json"
        control.parent.mkdir(parents=True, exist_ok=True)
        if on:
            control.write_text(json.dumps({"end": None, "marker": False, "hold": True}))
        else:
            control.unlink(missing_ok=True)

    def measure(self, size: int) -> dict[str, float]:
        job, root, run_id = self.running_job()
        self.hold(job, run_id, True)
        write = self.append(root, size, T0 + 10_000)
        time.sleep(2)  # any batch planned before the hold has finished
        self.hold(job, run_id, False)
        t0 = time.monotonic()
        _wait(self.caught_up(run_id, root), 3600, f"normal processing of {size}")
        normal = time.monotonic() - t0
        self.hold(job, run_id, True)
        self.append(root, size, T0 + 10_000 + size + 1_000)
        time.sleep(2)
        # The drain's first step replaces the hold with its cap at the end of the log.
        t0 = time.monotonic()
        op = self.operate(job, "drain", {"timeout_seconds": 3600})
        drain = time.monotonic() - t0
        end = op["result"]["end_offsets"]["clicks"]
        assert {int(p): o for p, o in end.items()} == EventLog(root).stream(
            "clicks"
        ).latest_offsets(), (end, "the drain must cover the whole backlog")
        return {"write_s": write, "normal_s": normal, "drain_s": drain}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default=None, help="backlog sizes, comma-separated")
    parser.add_argument("--full", action="store_true", help="also a backlog of 1M records")
    parser.add_argument("--reps", type=int, default=1)
    args = parser.parse_args()
    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else [0, 10_000, 100_000] + ([1_000_000] if args.full else [])
    )
    tmp = Path(tempfile.mkdtemp(prefix="tidegate-bench-drain-"))
    results: dict[int, list[dict[str, float]]] = {size: [] for size in sizes}
    with scratch_database("tidegate_bench_drain") as url:
        env = tidegate_env(url, tmp)
        port = str(free_port())
        runner_token = "tg_bench_runner_" + secrets.token_urlsafe(32)
        with (
            serve(
                ["-m", "app.cli", "runner", "--state-dir", str(tmp / "runner"), "--port", port],
                {**env, "TIDEGATE_PORT": port, "TIDEGATE_RUNNER_TOKEN": runner_token},
                tmp / "runner.log",
                "/batches",
                {"Authorization": f"Bearer {runner_token}"},
            ) as runner,
            serve(
                ["-m", "app.cli", "api", "--no-migrate"], env, tmp / "api.log", "/healthz"
            ) as api,
            serve(
                ["-m", "app.cli", "worker", "--poll-seconds", "0.2"],
                {**env, "TIDEGATE_PUBLIC_URL": api.url},
                tmp / "worker.log",
                None,
            ),
        ):
            client = api_client(api.url)
            runner_url = runner.url
            r = client.post(
                "/clusters",
                json={
                    "name": "runner",
                    "kind": "livy",
                    "url": runner_url,
                    "credentials": {"authorization": f"Bearer {runner_token}"},
                },
            )
            assert r.status_code == 201, r.text
            bench = Bench(client, tmp)
            print(f"tidegate {api.url}; runner {runner_url}; sizes {sizes}; {args.reps} rep(s)")
            for size in sizes:
                for rep in range(args.reps):
                    figures = bench.measure(size)
                    results[size].append(figures)
                    print(
                        f"  backlog {size:>9,} #{rep + 1}: normal {figures['normal_s']:.1f} s, "
                        f"drain {figures['drain_s']:.1f} s (write {figures['write_s']:.1f} s)"
                    )
    rows, summary = [], {}
    for size, runs in results.items():
        normal = median([r["normal_s"] for r in runs])
        drain = median([r["drain_s"] for r in runs])
        summary[str(size)] = {"normal_s": normal, "drain_s": drain, "runs": runs}
        rows.append(
            [
                f"{size:,}",
                f"{normal:.1f} s",
                f"{drain:.1f} s",
                f"{drain / normal:.1f}x" if normal > 0.5 else "n/a (nothing to process)",
                f"+{drain - normal:.1f} s",
            ]
        )
    print()
    print(table(rows, ["backlog (records)", "normal", "drain", "drain/normal", "overhead"]))
    save("drain", {"sizes": summary, "reps": args.reps})


if __name__ == "__main__":
    main()
