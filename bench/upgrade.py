"""Downtime of changing a running stream job: from the request to the new driver's first
committed batch, on the windowed pipeline (pipelines/windowed_counts.py) and a local Spark
standalone cluster (app/devtools/spark_local.py, LocalStandaloneCluster).

Strategies (each one repetition returns the downtime in seconds):

  bare      the bare Spark way, the baseline: kill the driver through the REST submission
            API, wait until it is gone, resubmit the same app on the same checkpoint
            (app/backends/standalone.StandaloneBackend), no tidegate involved;
  restart   tidegate: POST /jobs/{job}/restart (graceful stop at a batch boundary, fencing,
            resubmission from the same checkpoint);
  update-snapshot  tidegate: POST /jobs/{job}/update strategy snapshot (stop, snapshot, start
            the other version from it);
  update-drain     tidegate: POST /jobs/{job}/update strategy drain (drain: every window
            flushed; start the other version fresh at the drained offsets).

Both use the same signal: the first ``commits/N`` file of the checkpoint written after the
new driver was submitted. Input keeps arriving throughout, so every new driver has work.

    python bench/upgrade.py [--reps 3] [--strategies bare,restart,update-snapshot,update-drain]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.backends.base import SubmitSpec
from app.backends.standalone import StandaloneBackend
from app.devtools.spark_local import LocalStandaloneCluster, find_free_port
from bench.common import (
    ROOT,
    api_client,
    median,
    ratio,
    save,
    scratch_database,
    serve,
    table,
    tidegate_env,
)
from tidegate_runtime.produce import produce

PIPELINE = ROOT / "pipelines" / "windowed_counts.py"
CONF = {
    "spark.driver.memory": "512m",
    "spark.executor.memory": "512m",
    "spark.cores.max": "1",
    "spark.executor.cores": "1",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
}


@dataclass
class Context:
    tmp: Path
    cluster: LocalStandaloneCluster
    backend: StandaloneBackend
    api: httpx.Client
    log_root: Path
    state: dict[str, Any] = field(default_factory=dict)


def _wait(fn: Callable[[], Any], timeout: float, what: str, every: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f}s")
        time.sleep(every)


def first_commit_after(checkpoint: Path, since: float) -> float | None:
    """mtime of the earliest ``commits/N`` written after ``since`` (wall clock), if any."""
    commits = checkpoint / "commits"
    if not commits.is_dir():
        return None
    times = [p.stat().st_mtime for p in commits.iterdir() if p.name.isdigit()]
    later = [t for t in times if t > since]
    return min(later) if later else None


def _args(ctx: Context, out: str, checkpoint: str | None = None) -> list[str]:
    args = ["--root", str(ctx.log_root), "--stream", "clicks", "--output", str(ctx.tmp / out)]
    if checkpoint:
        args += ["--checkpoint", checkpoint, "--trigger", "1 seconds"]
    return args


# ---- bare Spark -----------------------------------------------------------------------------


def _bare_submit(ctx: Context, rep: int) -> tuple[str, float]:
    spec = SubmitSpec(
        tag=f"bare-windowed-{rep}",
        file=str(PIPELINE),
        args=_args(ctx, "bare-out", str(ctx.tmp / "bare-checkpoint")),
        conf=CONF,
    )
    submitted = time.time()
    return ctx.backend.submit(spec), submitted


def bare(ctx: Context, rep: int) -> float:
    """Kill through REST, wait until the driver is gone, resubmit on the same checkpoint."""
    checkpoint = ctx.tmp / "bare-checkpoint"
    if "bare" not in ctx.state:
        driver, since = _bare_submit(ctx, 0)
        _wait(lambda: first_commit_after(checkpoint, since), 240, "bare first commit")
        ctx.state["bare"] = driver
    time.sleep(3)  # a few batches in steady state
    t0 = time.time()
    ctx.backend.kill(ctx.state["bare"])
    _wait(lambda: ctx.backend.status(ctx.state["bare"]).state.terminal, 120, "bare kill")
    driver, since = _bare_submit(ctx, rep + 1)
    ctx.state["bare"] = driver
    committed = _wait(lambda: first_commit_after(checkpoint, since), 240, "bare new commit")
    return float(committed - t0)


def _bare_cleanup(ctx: Context) -> None:
    if "bare" in ctx.state:
        ctx.backend.kill(ctx.state["bare"])


# ---- tidegate ---------------------------------------------------------------------------------


def _operate(ctx: Context, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    r = ctx.api.post(path, json=body)
    assert r.status_code == 202, r.text
    op_id = r.json()["id"]
    op: dict[str, Any] = _wait(
        lambda: (
            (o := ctx.api.get(f"/operations/{op_id}").json())["state"] in ("succeeded", "failed")
            and o
        ),
        600,
        path,
    )
    assert op["state"] == "succeeded", op
    return op


def _version_body(ctx: Context, out: str) -> dict[str, Any]:
    return {
        "app": {"file": str(PIPELINE), "args": _args(ctx, out)},
        "cluster": "standalone",
        "conf": CONF,
        "queries": [
            {
                "name": "windowed_counts",
                "sources": [
                    {
                        "name": "clicks",
                        "kind": "eventlog",
                        "options": {"root": str(ctx.log_root), "stream": "clicks"},
                    }
                ],
                "stateful_operators": [{"kind": "tumbling_window"}],
                "output_mode": "append",
                "trigger": "1 SECONDS",
            }
        ],
    }


def _checkpoint(ctx: Context, job: str, run_id: int) -> Path:
    return ctx.tmp / "checkpoints" / job / str(run_id) / "windowed_counts"


def _output(job: str, strategy: str, version: int) -> str:
    """The output directory of ``version`` (see _update)."""
    return f"{job}-out" if strategy == "snapshot" else f"{job}-out-v{version}"


def _start_job(ctx: Context, job: str, out: str | None = None) -> None:
    """Create ``job`` with version 1 (writing to ``out``), submit it, wait for its first
    batch."""
    if job in ctx.state:
        return
    assert ctx.api.post("/jobs", json={"name": job}).status_code == 201
    body = _version_body(ctx, out or f"{job}-out-v1")
    assert ctx.api.post(f"/jobs/{job}/versions", json=body).status_code == 201
    since = time.time()
    op = _operate(ctx, f"/jobs/{job}/submit", {"version": 1})
    checkpoint = _checkpoint(ctx, job, op["run_id"])
    _wait(lambda: first_commit_after(checkpoint, since), 240, f"{job} first commit")
    ctx.state[job] = {"run_id": op["run_id"], "version": 1}


def restart(ctx: Context, rep: int) -> float:
    """POST /jobs/{job}/restart: stop at a batch boundary, then the same checkpoint again."""
    _start_job(ctx, "windowed")
    checkpoint = _checkpoint(ctx, "windowed", ctx.state["windowed"]["run_id"])
    time.sleep(3)
    t0 = time.time()
    op = _operate(ctx, "/jobs/windowed/restart")
    resubmitted = next(s for s in op["steps"] if s["name"] == "resubmit")
    since = datetime.fromisoformat(resubmitted["at"]).timestamp()
    committed = _wait(lambda: first_commit_after(checkpoint, since), 240, "tidegate new commit")
    return float(committed - t0)


def _update(ctx: Context, job: str, strategy: str) -> float:
    """POST /jobs/{job}/update to a new version; downtime until the new run's first batch
    past the handover commits (a snapshot's restored commits are older than its run).

    Where the new version writes matters, because a file sink's ``_spark_metadata`` log (in
    the output directory) belongs to one checkpoint lineage. By snapshot, the new run goes on
    from the snapshot's batch, so every version writes to the same directory and the log
    goes on too; a directory without that log's earlier batches fails the run with
    BATCH_METADATA_NOT_FOUND at its first compaction. By drain, the new run starts a fresh
    checkpoint at batch 0, so each version gets a directory of its own (in the old one its
    first batches would be skipped as "already committed")."""
    _start_job(ctx, job, out=_output(job, strategy, 1))
    number = ctx.state[job]["version"] + 1
    r = ctx.api.post(
        f"/jobs/{job}/versions", json=_version_body(ctx, _output(job, strategy, number))
    )
    assert r.status_code == 201, r.text
    target = int(r.json()["number"])
    time.sleep(3)
    t0 = time.time()
    op = _operate(
        ctx, f"/jobs/{job}/update", {"version": target, "strategy": strategy, "verify_seconds": 0}
    )
    created = next(s for s in op["steps"] if s["name"] == "create_run")
    since = datetime.fromisoformat(created["at"]).timestamp()
    run_id = op["result"]["run_id"]
    checkpoint = _checkpoint(ctx, job, run_id)
    committed = _wait(lambda: first_commit_after(checkpoint, since), 240, f"{job} new commit")
    ctx.state[job] = {"run_id": run_id, "version": target}
    return float(committed - t0)


def update_snapshot(ctx: Context, rep: int) -> float:
    """update strategy snapshot: stop at a batch boundary, snapshot, start from it."""
    return _update(ctx, "windowed-snapshot", "snapshot")


def update_drain(ctx: Context, rep: int) -> float:
    """update strategy drain: drain (flush every window), start fresh at the drained offsets."""
    return _update(ctx, "windowed-drain", "drain")


def _cleanup(job: str) -> Callable[[Context], None]:
    def cleanup(ctx: Context) -> None:
        if job in ctx.state:
            _operate(ctx, f"/jobs/{job}/cancel")

    return cleanup


STRATEGIES: dict[str, tuple[Callable[[Context, int], float], Callable[[Context], None]]] = {
    "bare": (bare, _bare_cleanup),
    "restart": (restart, _cleanup("windowed")),
    "update-snapshot": (update_snapshot, _cleanup("windowed-snapshot")),
    "update-drain": (update_drain, _cleanup("windowed-drain")),
}


def _feed(root: Path, stop: threading.Event) -> None:
    """Input that keeps arriving: 40 records a second, event time moving with the clock."""
    while not stop.is_set():
        produce(
            str(root),
            "clicks",
            2,
            rate=0,
            count=20,
            start_ts_ms=int(time.time() * 1000),
            ts_step_ms=25,
        )
        stop.wait(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--strategies", default="bare,restart,update-snapshot,update-drain")
    args = parser.parse_args()
    chosen = [s.strip() for s in args.strategies.split(",") if s.strip()]
    unknown = set(chosen) - set(STRATEGIES)
    if unknown:
        parser.error(f"unknown strategies {sorted(unknown)}; known: {sorted(STRATEGIES)}")

    tmp = Path(tempfile.mkdtemp(prefix="tidegate-bench-upgrade-"))
    log_root = tmp / "log"
    produce(
        str(log_root), "clicks", 2, rate=0, count=200, start_ts_ms=int(time.time() * 1000) - 60_000
    )
    stop_feed = threading.Event()
    feeder = threading.Thread(target=_feed, args=(log_root, stop_feed), daemon=True)
    feeder.start()
    cluster = LocalStandaloneCluster(
        tmp / "spark",
        find_free_port(),
        find_free_port(),
        find_free_port(),
        worker_cores=4,
        worker_memory="3g",
    )
    downtimes: dict[str, list[float]] = {s: [] for s in chosen}
    cluster.start()
    try:
        with scratch_database("tidegate_bench_upgrade") as url:
            env = tidegate_env(url, tmp)
            with (
                serve(
                    ["-m", "app.cli", "api", "--no-migrate"], env, tmp / "api.log", "/healthz"
                ) as api,
                serve(  # drivers call the API back: the worker hands them its address
                    ["-m", "app.cli", "worker", "--poll-seconds", "0.5"],
                    {**env, "TIDEGATE_PUBLIC_URL": api.url},
                    tmp / "worker.log",
                    None,
                ),
            ):
                client = api_client(api.url)
                r = client.post(
                    "/clusters",
                    json={
                        "name": "standalone",
                        "kind": "standalone",
                        "url": cluster.rest_url,
                        "master_url": cluster.master_url,
                        "ui_url": cluster.ui_url,
                    },
                )
                assert r.status_code == 201, r.text
                ctx = Context(
                    tmp,
                    cluster,
                    StandaloneBackend(
                        cluster.rest_url,
                        cluster.master_url,
                        ui_url=cluster.ui_url,
                        work_dir=cluster.worker_dir,
                    ),
                    client,
                    log_root,
                )
                print(
                    f"tidegate {api.url}; spark {cluster.master_url}; {args.reps} repetitions each"
                )
                for strategy in chosen:  # one app at a time: two drivers do not fit 2 cores
                    run, cleanup = STRATEGIES[strategy]
                    try:
                        for rep in range(args.reps):
                            seconds = run(ctx, rep)
                            downtimes[strategy].append(seconds)
                            print(f"  {strategy} #{rep + 1}: {seconds:.1f} s")
                    finally:
                        cleanup(ctx)
                        _wait(
                            lambda: all(
                                d.get("state") not in ("RUNNING", "SUBMITTED")
                                for d in httpx.get(cluster.ui_url + "/json/")
                                .json()
                                .get("activedrivers", [])
                            ),
                            120,
                            "drivers gone",
                        )
    finally:
        stop_feed.set()
        cluster.stop()

    base = median(downtimes["bare"]) if downtimes.get("bare") else None
    rows = []
    for strategy, values in downtimes.items():
        m = median(values)
        rows.append(
            [
                strategy,
                f"{m:.1f} s",
                " ".join(f"{v:.1f}" for v in values),
                ratio(m, base) if base else "n/a",
            ]
        )
    print("\nrequest -> first committed batch of the new driver")
    print(table(rows, ["strategy", "median", "each (s)", "vs bare Spark"]))
    save(
        "upgrade",
        {
            "reps": args.reps,
            "downtime_s": {s: {"median": median(v), "each": v} for s, v in downtimes.items() if v},
            "ratio_to_bare": {s: median(v) / base for s, v in downtimes.items() if v and base},
        },
    )


if __name__ == "__main__":
    main()
