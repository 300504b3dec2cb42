"""Downtime of changing a running stream job, on the windowed pipeline
(pipelines/windowed_counts.py) and a local Spark standalone cluster
(app/devtools/spark_local.py, LocalStandaloneCluster). Two figures per switch:

  request→commit  from the request to the new driver's first committed batch;
  stood still     from the old driver's last committed batch to the new one's first: how
                  long the output stood still.

Rounds are interleaved (every strategy once a round, the order turning each round, one app
on the cluster at a time, a fresh job per switch), and each tidegate switch also prints
when each operation step and run transition ended: where the seconds go. Strategies:

  bare      the bare Spark way, the baseline: kill the driver through the REST submission
            API, wait until it is gone, resubmit the same app on the same checkpoint
            (app/backends/standalone.StandaloneBackend), no tidegate involved;
  restart   tidegate: POST /jobs/{job}/restart, cold (graceful stop at a batch boundary,
            fencing, resubmission from the same checkpoint);
  restart-prewarmed  the same, pre-warmed: the next attempt's driver starts first as the
            run's spare and takes over after the stop (no submission at the switch);
  crash     the running driver's JVM SIGKILLed; the supervised restart (backoff 1 s)
            resubmits it on its checkpoint (request → commit counts from the kill);
  crash-hotspare  the same with the job's hot spare: the waiting spare takes over;
  update-snapshot  tidegate: POST /jobs/{job}/update strategy snapshot (stop, snapshot, start
            the other version from it);
  update-drain     tidegate: POST /jobs/{job}/update strategy drain (drain: every window
            flushed; start the other version fresh at the drained offsets).
  update-snapshot-prewarmed, update-drain-prewarmed  the same, pre-warmed (``prewarm``):
            the new driver starts as a standby while the old run processes and waits for go.
            The cold ones above send ``prewarm: false``.
  flink     the anchor: Flink 2.3 stop-with-savepoint + restore of a PyFlink SQL windowed
            job (../shared/anchors/flink; run its ``run.sh setup`` once first).

All use the same signal: the first ``commits/N`` file of the checkpoint written after the
new driver was submitted. Input keeps arriving throughout, so every new driver has work.

    python bench/upgrade.py [--reps 3] [--strategies bare,restart,update-snapshot,update-drain]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
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
import psutil

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
from tidegate_runtime.sources.eventlog_producer import produce

PIPELINE = ROOT / "pipelines" / "windowed_counts.py"
STEADY_SECONDS = 3.0  # a few batches in steady state before each switch
CONF = {
    "spark.driver.memory": "512m",
    "spark.executor.memory": "512m",
    "spark.cores.max": "1",
    "spark.executor.cores": "1",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
}


@dataclass(frozen=True)
class Source:
    """What the measured pipeline reads, for bare submissions and tidegate versions alike: its
    file, its arguments before ``--output``, what a bare submission adds beside its
    ``--checkpoint``, a version's declaration of its source and the conf it needs. The event
    log's by default (``eventlog_source``); bench/kafka_upgrade.py's a Kafka topic."""

    pipeline: Path
    args: list[str]
    bare_args: list[str]
    declared: dict[str, Any]
    conf: dict[str, str] = field(default_factory=dict)


def eventlog_source(log_root: Path) -> Source:
    """pipelines/windowed_counts.py on the event log's stream ``clicks`` under ``log_root``."""
    return Source(
        PIPELINE,
        ["--root", str(log_root), "--stream", "clicks"],
        ["--trigger", "1 seconds"],
        {
            "name": "clicks",
            "kind": "eventlog",
            "options": {"root": str(log_root), "stream": "clicks"},
        },
    )


# The write times (wall clock) of the ``commits/N`` of a checkpoint (its folder or URL).
Written = Callable[[str], list[float]]


def local_commits(checkpoint: str) -> list[float]:
    """The mtimes of the ``commits/N`` files of the checkpoint folder ``checkpoint``."""
    commits = Path(checkpoint) / "commits"
    if not commits.is_dir():
        return []
    return [p.stat().st_mtime for p in commits.iterdir() if p.name.isdigit()]


@dataclass(frozen=True)
class Checkpoints:
    """Where the measured jobs checkpoint and how their commits are read: folders under
    ``base`` on this disk by default (``local_checkpoints``); bench/kafka_upgrade.py's
    ``--checkpoints s3`` hands keys in a bucket instead. tidegate's checkpoint root is
    ``base``/checkpoints (``env``: the rest of tidegate's settings for it, e.g. the store's
    options), bare Spark's checkpoints are beside it."""

    base: str
    written: Written = local_commits
    env: dict[str, str] = field(default_factory=dict)

    def at(self, *parts: str) -> str:
        return "/".join([self.base.rstrip("/"), *parts])


def local_checkpoints(tmp: Path) -> Checkpoints:
    return Checkpoints(str(tmp))


@dataclass
class Context:
    tmp: Path
    cluster: LocalStandaloneCluster
    backend: StandaloneBackend
    api: httpx.Client
    log_root: Path
    state: dict[str, Any] = field(default_factory=dict)
    source: Source | None = None  # None: the event log's under log_root
    checkpoints: Checkpoints | None = None  # None: folders under tmp

    @property
    def pipeline(self) -> Source:
        return self.source or eventlog_source(self.log_root)

    @property
    def store(self) -> Checkpoints:
        return self.checkpoints or local_checkpoints(self.tmp)


def _wait(fn: Callable[[], Any], timeout: float, what: str, every: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f}s")
        time.sleep(every)


def commit_times(
    checkpoint: Path | str,
    since: float = -math.inf,
    until: float = math.inf,
    written: Written = local_commits,
) -> list[float]:
    """The write times (wall clock; on this disk the mtimes) of the ``commits/N`` written
    after ``since`` and before ``until``, in order."""
    return sorted(t for t in written(str(checkpoint)) if since < t < until)


def first_commit_after(
    checkpoint: Path | str, since: float, written: Written = local_commits
) -> float | None:
    """When the earliest ``commits/N`` written after ``since`` was written, if any."""
    return next(iter(commit_times(checkpoint, since=since, written=written)), None)


def _args(ctx: Context, out: str, checkpoint: str | None = None) -> list[str]:
    args = [*ctx.pipeline.args, "--output", str(ctx.tmp / out)]
    if checkpoint:
        args += ["--checkpoint", checkpoint, *ctx.pipeline.bare_args]
    return args


@dataclass
class Switch:
    """One measured switch. Times are wall-clock seconds since the request (``t0``)."""

    request_to_commit: float  # the request → the new driver's first committed batch
    stood_still: float  # the old driver's last commit → the new driver's first commit
    phases: dict[str, float] = field(default_factory=dict)  # what happened when, since t0
    load: float = 0.0  # 1-minute load average when the switch began
    first_batch: dict[str, float] = field(default_factory=dict)  # see first_batch()
    # The old run's steady batch before the switch: the median gap between its commits (the
    # least a reader of the output waits between two batches anyway), if measured.
    steady: float | None = None


def last_commit_before(
    checkpoint: Path | str, until: float, written: Written = local_commits
) -> float | None:
    """When the latest ``commits/N`` written before ``until`` was written, if any."""
    return next(reversed(commit_times(checkpoint, until=until, written=written)), None)


def _at(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


# ---- bare Spark -----------------------------------------------------------------------------


def _bare_submit(ctx: Context, tag: str, checkpoint: str) -> tuple[str, float]:
    spec = SubmitSpec(
        tag=tag,
        file=str(ctx.pipeline.pipeline),
        args=_args(ctx, f"{tag}-out", checkpoint),
        conf={**CONF, **ctx.pipeline.conf},
    )
    submitted = time.time()
    return ctx.backend.submit(spec), submitted


def bare(ctx: Context, rep: int) -> Switch:
    """Kill through REST, wait until the driver is gone, resubmit on the same checkpoint."""
    checkpoint, written = ctx.store.at(f"bare-checkpoint-{rep}"), ctx.store.written
    driver, since = _bare_submit(ctx, f"bare-{rep}-a", checkpoint)
    ctx.state["bare"] = driver
    _wait(lambda: first_commit_after(checkpoint, since, written), 240, "bare first commit")
    time.sleep(STEADY_SECONDS)
    load, t0 = os.getloadavg()[0], time.time()
    ctx.backend.kill(driver)
    _wait(lambda: ctx.backend.status(driver).state.terminal, 120, "bare kill")
    gone = time.time()
    driver, since = _bare_submit(ctx, f"bare-{rep}-b", checkpoint)
    ctx.state["bare"] = driver
    committed = _wait(
        lambda: first_commit_after(checkpoint, since, written), 240, "bare new commit"
    )
    last = last_commit_before(checkpoint, since, written) or t0
    phases = {"old driver gone": gone - t0, "resubmitted": since - t0}
    return Switch(committed - t0, committed - last, phases, load)


def _bare_cleanup(ctx: Context) -> None:
    if "bare" in ctx.state:
        ctx.backend.kill(ctx.state.pop("bare"))


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
        "app": {"file": str(ctx.pipeline.pipeline), "args": _args(ctx, out)},
        "cluster": "standalone",
        "conf": {**CONF, **ctx.pipeline.conf},
        "queries": [
            {
                "name": "windowed_counts",
                "sources": [ctx.pipeline.declared],
                "stateful_operators": [{"kind": "tumbling_window"}],
                "output_mode": "append",
                "trigger": "1 SECONDS",
            }
        ],
    }


def _checkpoint(ctx: Context, job: str, run_id: int) -> str:
    return ctx.store.at("checkpoints", job, str(run_id), "windowed_counts")


def _start_job(ctx: Context, job: str, out: str, fields: dict[str, Any] | None = None) -> int:
    """Create ``job`` with version 1 (writing to ``out``), submit it, wait for its first
    batch and a few more; its run id. Every repetition has a job of its own, so rounds can
    interleave the strategies with one app on the cluster at a time."""
    policy = {"min_backoff": "1s"}  # a crash's restart: the shortest sensible backoff
    body = {"name": job, "restart_policy": policy, **(fields or {})}
    assert ctx.api.post("/jobs", json=body).status_code == 201
    version = _version_body(ctx, out)
    assert ctx.api.post(f"/jobs/{job}/versions", json=version).status_code == 201
    since = time.time()
    op = _operate(ctx, f"/jobs/{job}/submit", {"version": 1})
    checkpoint = _checkpoint(ctx, job, op["run_id"])
    written = ctx.store.written
    _wait(lambda: first_commit_after(checkpoint, since, written), 240, f"{job} first commit")
    ctx.state["job"] = job
    time.sleep(STEADY_SECONDS)
    return int(op["run_id"])


def _phases(ctx: Context, op: dict[str, Any], t0: float, runs: list[int]) -> dict[str, float]:
    """Each operation step and each run transition, in seconds since the request."""
    phases = {f"step {s['name']}": _at(s["at"]) - t0 for s in op["steps"]}
    for label, run_id in zip(("old run", "new run"), runs, strict=False):
        for t in ctx.api.get(f"/runs/{run_id}").json()["transitions"]:
            if _at(t["at"]) >= t0:
                phases[f"{label} → {t['to_state']}"] = _at(t["at"]) - t0
    return phases


# What the new driver's first batch spent its time on: Spark's durations, and the RocksDB
# store's load (summed over the partitions, which load side by side) and eviction scan.
FIRST_BATCH_METRICS = (
    "rocksdbLoadLatencyMs",
    "rocksdbLoadFromSnapshotLatencyMs",
    "rocksdbReplayChangeLogLatencyMs",
    "rocksdbNumReplayChangelogFiles",
    "rocksdbFilesCopied",
    "rocksdbBytesCopied",
    "numRowsReadDuringEviction",
    "rocksdbChangeLogWriterCommitLatencyMs",
)


def first_batch(ctx: Context, run_id: int, since: float) -> dict[str, float]:
    """The first batch the run reported after ``since`` (wall clock): its input rows, Spark's
    ``durationMs`` (``ms <name>``) and the state store's figures above."""

    def reported() -> list[dict[str, Any]]:
        rows = ctx.api.get(f"/runs/{run_id}/progress", params={"limit": 200}).json()
        return [r for r in rows if _at(r["at"]) >= since and not r["payload"].get("idle")]

    # The driver posts a batch's progress after its commit, from a queue: it may lag a little.
    try:
        later = _wait(reported, 30, f"run {run_id}'s progress")
    except TimeoutError:
        return {}
    payload = min(later, key=lambda r: r["batch_id"])["payload"]
    out = {"input rows": float(payload.get("num_input_rows") or 0)}
    out.update({f"ms {k}": float(v) for k, v in (payload.get("durations_ms") or {}).items()})
    for operator in payload.get("state_operators") or []:
        metrics = operator.get("custom_metrics") or {}
        for name in FIRST_BATCH_METRICS:
            if name in metrics:
                out[name] = out.get(name, 0.0) + metrics[name]
    return out


def _new_attempt_at(ctx: Context, run_id: int, t0: float) -> float:
    """When the run moved to its next attempt (its previous driver known gone): no commit of
    the old driver can come after it."""
    transitions = ctx.api.get(f"/runs/{run_id}").json()["transitions"]
    return min(
        _at(t["at"]) for t in transitions if t["to_state"] == "submitting" and _at(t["at"]) >= t0
    )


def _restart(ctx: Context, rep: int, prewarm: bool) -> Switch:
    job = f"restart{'-prewarmed' if prewarm else ''}-{rep}"
    run_id = _start_job(ctx, job, f"{job}-out")
    checkpoint = _checkpoint(ctx, job, run_id)
    load, t0 = os.getloadavg()[0], time.time()
    op = _operate(ctx, f"/jobs/{job}/restart", {"prewarm": prewarm})
    assert op["result"]["spare_taken_over"] is prewarm, op["result"]
    since, written = _new_attempt_at(ctx, run_id, t0), ctx.store.written
    committed = _wait(
        lambda: first_commit_after(checkpoint, since, written), 240, "tidegate new commit"
    )
    last = last_commit_before(checkpoint, since, written) or t0
    return Switch(committed - t0, committed - last, _phases(ctx, op, t0, [run_id]), load)


def restart(ctx: Context, rep: int) -> Switch:
    """POST /jobs/{job}/restart, cold: stop at a batch boundary, then the same checkpoint
    again in a new driver."""
    return _restart(ctx, rep, prewarm=False)


def restart_prewarmed(ctx: Context, rep: int) -> Switch:
    """POST /jobs/{job}/restart, pre-warmed: the next attempt's driver starts first as a
    spare, then the run stops at a batch boundary and the spare takes over."""
    return _restart(ctx, rep, prewarm=True)


def _driver_jvm(tag: str) -> psutil.Process:
    for proc in psutil.process_iter(["cmdline"]):
        if f"-Dspark.app.name={tag}" in (proc.info["cmdline"] or []):
            return proc
    raise LookupError(f"no driver JVM tagged {tag}")


def _crash(ctx: Context, rep: int, hot_spare: bool) -> Switch:
    """SIGKILL the running driver's JVM; the supervised restart (backoff 1 s) brings the
    run back on its checkpoint. Request → commit counts from the kill."""
    job = f"crash{'-hotspare' if hot_spare else ''}-{rep}"
    run_id = _start_job(ctx, job, f"{job}-out", {"hot_spare": hot_spare})
    return measure_crash(ctx, job, run_id, _checkpoint(ctx, job, run_id), hot_spare)


def measure_crash(
    ctx: Context,
    job: str,
    run_id: int,
    checkpoint: Path | str,
    hot_spare: bool,
    timeout: float = 240,
) -> Switch:
    """Kill the running driver of ``run_id`` (once its spare is ready, with ``hot_spare``);
    until the next attempt's first commit (also bench/statesize.py)."""
    if hot_spare:
        _wait(
            lambda: (ctx.api.get(f"/runs/{run_id}").json()["spare"] or {}).get("ready_at"),
            timeout,
            f"{job} spare ready",
        )
    driver = _driver_jvm(ctx.api.get(f"/runs/{run_id}").json()["tag"])
    load, t0 = os.getloadavg()[0], time.time()
    driver.kill()
    _wait(
        lambda: (
            (r := ctx.api.get(f"/runs/{run_id}").json())["attempt"] == 1 and r["state"] == "running"
        ),
        timeout,
        f"{job} restarted",
    )
    since, written = _new_attempt_at(ctx, run_id, t0), ctx.store.written
    committed = _wait(
        lambda: first_commit_after(checkpoint, since, written), timeout, f"{job} commit"
    )
    last = last_commit_before(checkpoint, t0, written) or t0
    phases = _phases(ctx, {"steps": []}, t0, [run_id])
    return Switch(committed - t0, committed - last, phases, load, first_batch(ctx, run_id, since))


def crash(ctx: Context, rep: int) -> Switch:
    """A crashed driver, restarted by supervision: a new driver from scratch."""
    return _crash(ctx, rep, hot_spare=False)


def crash_hotspare(ctx: Context, rep: int) -> Switch:
    """A crashed driver of a job with a hot spare: the spare takes over."""
    return _crash(ctx, rep, hot_spare=True)


def _update(ctx: Context, rep: int, strategy: str, prewarm: bool = False) -> Switch:
    """POST /jobs/{job}/update to version 2; the new run's first batch past the handover.

    By snapshot the new run goes on from the snapshot's batch and writes to the same output
    directory (its file sink's ``_spark_metadata`` log goes on too: a new directory fails the
    update, see app/worker/runs/verify.py). By drain the new run starts a fresh checkpoint at
    batch 0 and writes a directory of its own."""
    job = f"update-{strategy}{'-prewarmed' if prewarm else ''}-{rep}"
    run_id = _start_job(ctx, job, f"{job}-out")
    out2 = f"{job}-out" if strategy == "snapshot" else f"{job}-out-v2"
    r = ctx.api.post(f"/jobs/{job}/versions", json=_version_body(ctx, out2))
    assert r.status_code == 201, r.text
    load, t0 = os.getloadavg()[0], time.time()
    body = {"version": 2, "strategy": strategy, "verify_seconds": 0, "prewarm": prewarm}
    op = _operate(ctx, f"/jobs/{job}/update", body)
    # Cold, the new run is created once the old one ended; pre-warmed, its standby gets go.
    since = _at(next(s for s in op["steps"] if s["name"] in ("create_run", "go"))["at"])
    new_run = op["result"]["run_id"]
    checkpoint, written = _checkpoint(ctx, job, new_run), ctx.store.written
    committed = _wait(
        lambda: first_commit_after(checkpoint, since, written), 240, f"{job} new commit"
    )
    last = last_commit_before(_checkpoint(ctx, job, run_id), committed, written) or t0
    phases = _phases(ctx, op, t0, [run_id, new_run])
    return Switch(committed - t0, committed - last, phases, load)


def update_snapshot(ctx: Context, rep: int) -> Switch:
    """update strategy snapshot: stop at a batch boundary, snapshot, start from it."""
    return _update(ctx, rep, "snapshot")


def update_drain(ctx: Context, rep: int) -> Switch:
    """update strategy drain: drain (flush every window), start fresh at the drained offsets."""
    return _update(ctx, rep, "drain")


def update_snapshot_prewarmed(ctx: Context, rep: int) -> Switch:
    """update strategy snapshot, the new driver started beforehand as a standby."""
    return _update(ctx, rep, "snapshot", prewarm=True)


def update_drain_prewarmed(ctx: Context, rep: int) -> Switch:
    """update strategy drain, the new driver started beforehand as a standby."""
    return _update(ctx, rep, "drain", prewarm=True)


FLINK = ROOT.parent / "shared" / "anchors" / "flink" / "run.sh"


def flink(ctx: Context, rep: int) -> Switch:
    """Flink 2.3's stop-with-savepoint + restore of its PyFlink SQL windowed job, through the
    harness in ../shared/anchors/flink (``run.sh setup`` once)."""
    return flink_anchor()


def flink_anchor(env: dict[str, str] | None = None) -> Switch:
    """One stop-with-savepoint + restore through the anchor's harness (``env``: its settings,
    e.g. FLINK_JOB). Its cluster is started for this round only (it keeps a core busy). Its one
    figure, stop call → first output line of the restored job, is both the request → commit and
    the output standing still; the phases say when the savepoint was done and the restored job
    was submitted, running and writing."""
    env = {**os.environ, **(env or {})}
    try:  # stopped even when it did not come up whole
        subprocess.run(
            ["bash", str(FLINK), "start"], check=True, capture_output=True, timeout=180, env=env
        )
        load = os.getloadavg()[0]
        done = subprocess.run(
            ["bash", str(FLINK), "bench", "1"],
            check=True,
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
    finally:
        subprocess.run(["bash", str(FLINK), "stop"], capture_output=True, timeout=120, env=env)
    line = [x for x in done.stdout.splitlines() if x.startswith("{")][-1]
    cycle = json.loads(line)
    if cycle["downtime_stop_to_first_output_s"] is None:
        raise TimeoutError(f"the restored Flink job wrote no output: {line[:200]}")
    if cycle.get("restored_from") != cycle["savepoint"]:
        raise AssertionError(f"the Flink job was not restored from its savepoint: {line[:300]}")
    figure = float(cycle["downtime_stop_to_first_output_s"])
    submitted = figure - float(cycle["restore_first_output_s"])  # the restore's client started
    phases = {
        "savepoint taken, job stopping": float(cycle["stop_returned_s"]),
        "restore submitted (flink run)": submitted,
        "restore client returned": submitted + float(cycle["restore_cli_return_s"]),
        "restored job's tasks running": submitted + float(cycle["restore_all_tasks_running_s"]),
        "first output": figure,
    }
    return Switch(figure, figure, phases, load)


def _no_cleanup(ctx: Context) -> None:
    pass


def _cancel_job(ctx: Context) -> None:
    if "job" in ctx.state:
        _operate(ctx, f"/jobs/{ctx.state.pop('job')}/cancel")


Strategy = tuple[Callable[[Context, int], Switch], Callable[[Context], None]]


STRATEGIES: dict[str, Strategy] = {
    "bare": (bare, _bare_cleanup),
    "restart": (restart, _cancel_job),
    "restart-prewarmed": (restart_prewarmed, _cancel_job),
    "crash": (crash, _cancel_job),
    "crash-hotspare": (crash_hotspare, _cancel_job),
    "update-snapshot": (update_snapshot, _cancel_job),
    "update-drain": (update_drain, _cancel_job),
    "update-snapshot-prewarmed": (update_snapshot_prewarmed, _cancel_job),
    "update-drain-prewarmed": (update_drain_prewarmed, _cancel_job),
    "flink": (flink, _no_cleanup),
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
    try:
        switches, failures = measure(tmp, log_root, chosen, args.reps, STRATEGIES)
    finally:
        stop_feed.set()

    _report(switches, args.reps)
    for strategy, errors in failures.items():
        if errors:
            print(f"{strategy}: {len(errors)} of {args.reps} switches FAILED: {errors}")


def measure(
    tmp: Path,
    log_root: Path,
    chosen: list[str],
    reps: int,
    strategies: dict[str, Strategy],
    source: Source | None = None,
    checkpoints: Checkpoints | None = None,
) -> tuple[dict[str, list[Switch]], dict[str, list[str]]]:
    """A Spark standalone cluster, tidegate's API and worker on a scratch database, then
    ``reps`` rounds of the ``chosen`` strategies, interleaved; everything started here is
    stopped on the way out. The switches of each strategy, and its failures. ``checkpoints``:
    where they go (None: folders under ``tmp``)."""
    store = checkpoints or local_checkpoints(tmp)
    cluster = LocalStandaloneCluster(
        tmp / "spark",
        find_free_port(),
        find_free_port(),
        find_free_port(),
        worker_cores=4,
        worker_memory="3g",
    )
    switches: dict[str, list[Switch]] = {s: [] for s in chosen}
    failures: dict[str, list[str]] = {s: [] for s in chosen}
    cluster.start()
    try:
        with scratch_database("tidegate_bench_upgrade") as url:
            root = {"TIDEGATE_CHECKPOINT_ROOT": store.at("checkpoints"), **store.env}
            env = tidegate_env(url, tmp, **root)
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
                    source=source,
                    checkpoints=store,
                )
                print(f"tidegate {api.url}; spark {cluster.master_url}; {reps} rounds")
                # Rounds interleaved: every strategy once a round, in an order that turns
                # each round, so a change of load falls on all of them alike. One app on the
                # cluster at a time: two drivers do not fit 2 cores.
                for rep in range(reps):
                    shift = rep % len(chosen)
                    for strategy in chosen[shift:] + chosen[:shift]:
                        run, cleanup = strategies[strategy]
                        try:
                            switch = run(ctx, rep)
                        except (AssertionError, TimeoutError, subprocess.SubprocessError) as exc:
                            # Counted and shown, not hidden: one failed switch ends no run.
                            failures[strategy].append(str(exc)[:300])
                            print(f"  round {rep + 1} {strategy}: FAILED {str(exc)[:300]}")
                            continue
                        finally:
                            cleanup(ctx)
                            _wait(lambda: _no_active_driver(cluster), 120, "drivers gone")
                        switches[strategy].append(switch)
                        print(
                            f"  round {rep + 1} {strategy}: request→commit "
                            f"{switch.request_to_commit:.1f} s, stood still "
                            f"{switch.stood_still:.1f} s (load {switch.load:.1f})"
                        )
    finally:
        cluster.stop()
    return switches, failures


def _no_active_driver(cluster: LocalStandaloneCluster) -> bool:
    drivers = httpx.get(cluster.ui_url + "/json/").json().get("activedrivers", [])
    return all(d.get("state") not in ("RUNNING", "SUBMITTED") for d in drivers)


def _figure(values: list[float], base: list[float] | None) -> list[str]:
    m = median(values)
    return [
        f"{m:.1f} s",
        f"{min(values):.1f}-{max(values):.1f}",
        ratio(m, median(base)) if base else "n/a",
    ]


def _go_to_commit(switch: Switch) -> float | None:
    """From the moment the new driver was told to go (an update's ``go`` step; for a restart
    or a crash, the run back to ``running`` on its spare or new driver) to its first commit."""
    go = switch.phases.get("step go")
    if go is None:
        running = [t for name, t in switch.phases.items() if name.endswith("→ running")]
        go = max(running) if running else None
    return None if go is None else switch.request_to_commit - go


def _report(
    switches: dict[str, list[Switch]],
    reps: int,
    results: str = "upgrade",
    anchor: str = "flink",
    extra: dict[str, Any] | None = None,
) -> None:
    """The table (ratios to ``bare`` and to the ``anchor``), where the seconds went, and the
    figures saved as bench/results/<results>.json (with ``extra``)."""
    done = {s: v for s, v in switches.items() if v}
    bare_runs = done.get("bare")
    base_commit = [s.request_to_commit for s in bare_runs] if bare_runs else None
    base_still = [s.stood_still for s in bare_runs] if bare_runs else None
    rows = [
        [
            strategy,
            *_figure([s.request_to_commit for s in values], base_commit),
            *_figure([s.stood_still for s in values], base_still),
            f"{median([s.load for s in values]):.1f}",
        ]
        for strategy, values in done.items()
    ]
    flink_runs = done.get(anchor)
    for row, values in zip(rows, done.values(), strict=True):
        still = median([s.stood_still for s in values])
        row.insert(
            -1, ratio(still, median([s.stood_still for s in flink_runs])) if flink_runs else "n/a"
        )
    print(
        "\nmedians of the rounds (spread: min-max); ratios to bare Spark and Flink in the same run"
    )
    header = ["strategy", "request→commit", "spread", "vs bare", "stood still", "spread"]
    print(table(rows, [*header, "vs bare", f"vs {anchor}", "load"]))
    handed = {s: [g for x in v if (g := _go_to_commit(x)) is not None] for s, v in done.items()}
    if any(handed.values()):
        print("\nthe new driver told to go → its first commit (median; min-max): Spark's part")
        for strategy, seen in handed.items():
            if seen:
                print(f"  {strategy}: {median(seen):.1f} s ({min(seen):.1f}-{max(seen):.1f})")
    for strategy, values in done.items():
        names = list(dict.fromkeys(name for s in values for name in s.phases))
        if not names:
            continue
        print(f"\n{strategy}: when each phase ended, seconds since the request (median)")
        for name in sorted(names, key=lambda n: median([s.phases.get(n, 0.0) for s in values])):
            seen = [s.phases[name] for s in values if name in s.phases]
            print(f"  {median(seen):6.1f}  {name}")
    save(
        results,
        {
            **(extra or {}),
            "rounds": reps,
            "interleaved": True,
            "switches": {
                s: [
                    {
                        "request_to_commit_s": x.request_to_commit,
                        "stood_still_s": x.stood_still,
                        "load": x.load,
                        "phases_s": x.phases,
                    }
                    for x in v
                ]
                for s, v in done.items()
            },
            "median_s": {
                s: {
                    "request_to_commit": median([x.request_to_commit for x in v]),
                    "stood_still": median([x.stood_still for x in v]),
                    **({"go_to_commit": median(handed[s])} if handed[s] else {}),
                }
                for s, v in done.items()
            },
        },
    )


if __name__ == "__main__":
    main()
