"""The pause at size (issue 25): a large-state pipeline (``--pipeline``: dedup, the default,
pipelines/dedup_events.py; or totals, pipelines/key_totals.py, whose batches read only the
keys they touch: bench/statesize_pipelines.py) on the RocksDB state store with changelog
checkpointing, at about 10 MB, 100 MB (and 1 GB with
--sizes) of state on disk, on a local Spark standalone cluster, beside bare Spark and Flink.

For each size the state is built once, with local Spark, from the event log (every key held:
the deduplication's seed events share one event time, so the hour-long watermark drops none;
the totals' seed has one event per account). Then,
rounds interleaved (every strategy once a round, the order turning), each switch on a fresh
job whose checkpoint and output are hard-linked copies of the seed (``cp -al``: Spark writes
new files and never rewrites one, so the copies never touch the seed):

  bare      kill the driver through the REST submission API, resubmit the same app on the
            same checkpoint (no tidegate);
  update-snapshot   tidegate: POST /jobs/{job}/update strategy snapshot, pre-warmed (the new
            driver waits as a standby while the old one processes);
  update-drain      the same by drain (the new version starts fresh at the drained offsets);
  update-snapshot-2cores   the same with two executor cores per app, one per state
            partition, as docs/state-stores.md advises (the others run one);
  update-snapshot-cold, update-drain-cold   the same, not pre-warmed (``prewarm: false``):
            the new driver is submitted after the old one ended;
  update-drain-untried  update-drain without its trial (``dry_run: false``): the standby
            waits cold, as before the rehearsal (the baseline for what the trial saves);
  restart   tidegate: POST /jobs/{job}/restart, pre-warmed (the run's spare takes over);
  crash-hotspare    the driver's JVM SIGKILLed, the job's hot spare takes over;
  flink     Flink 2.3 stop-with-savepoint + restore of ../shared/anchors/flink/sql_state_job.py
            on its RocksDB backend, with as many keys as the seed holds (ids or accounts) (``run.sh
            setup`` once; its state fills for --flink-fill seconds first).

The figure is the time the output stood still: from the old driver's last committed batch to
the new driver's first (the first ``commits/N`` written after the new driver was told to go);
for Flink, from the stop call to the restored job's first output. Beside it, the old run's
*steady batch* (the median gap between its commits before the switch, its first batch after
the start left out): a pipeline whose every batch reads its whole state (the deduplication's
eviction scans every id) waits that long between two outputs anyway, so "beyond it" is the
pause the switch adds. Input keeps arriving
throughout. Each tidegate switch also prints when each step ended: where the seconds go.

    python bench/statesize.py                       # 10 MB and 100 MB, 2 rounds (~30 min)
    python bench/statesize.py --sizes 10,100,1000 --reps 1 --flink-fill 240  # the curve (~90 min)
    python bench/statesize.py --sizes 10 --reps 1 --strategies bare,update-snapshot  # smoke
    # 1 GB (~2 h): seeds built beside other work, rounds once /tmp/hold is removed
    python bench/statesize.py --sizes 10,1000 --results statesize-1gb --hold-while /tmp/hold
    # the same for running totals, whose batch does not grow with the state
    python bench/statesize.py --pipeline totals --sizes 10,1000 --strategies update-snapshot,flink
    # seeds built once in a folder of their own and reused by the next run (until rounds ran)
    python bench/statesize.py --pipeline totals --sizes 10,1000 --seeds /tmp/totals-seeds
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
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
from bench.statesize_pipelines import PIPELINES, T0, Pipeline
from bench.upgrade import (
    CONF,
    FLINK,
    Context,
    Switch,
    _at,
    _new_attempt_at,
    _no_active_driver,
    _operate,
    _phases,
    _wait,
    commit_times,
    first_batch,
    first_commit_after,
    last_commit_before,
    measure_crash,
)
from pipelines.register_examples import ROCKSDB_CONF
from tidegate_runtime.sources.eventlog import EventLog

STEADY_SECONDS = 3.0
DRAIN_REQUESTED = "step request_drain"  # the phase an update by drain fixes its end offsets at
# Commits of a started run before its switch: the gaps after its first one (which loads the
# state) are its steady batch, what a reader of the output waits between batches anyway.
STEADY_COMMITS = 4
SPARK_CONF = {**CONF, **ROCKSDB_CONF, "spark.driver.memory": "1g"}
BATCH_LIMIT = "200000"  # records per batch, so that a driver catching up commits early


@dataclass
class Seed:
    """A checkpoint and output built once for one size, copied (linked) for every switch."""

    mb: int
    pipeline: Pipeline
    stream: str  # a stream of its own: a job on one seed never catches up another's events
    events: int  # keys held: event ids, or accounts
    checkpoint: Path
    output: Path
    state_bytes: int


def du(path: Path) -> int:
    """Bytes on disk below ``path`` (each hard-linked file once, as ``du`` counts)."""
    return int(
        subprocess.run(
            ["du", "-sb", str(path)], capture_output=True, text=True, check=True
        ).stdout.split()[0]
    )


def build_seed(work: Path, log_root: Path, mb: int, pipeline: Pipeline) -> Seed:
    """``mb`` MB worth of keys through the pipeline with local Spark, in a child process
    (its JVM gone before anything is measured); or the seed built there before (--seeds),
    if its stream has not grown since."""
    keys, stream = pipeline.keys_for(mb), f"{pipeline.name}-{mb}mb"
    base = work / f"seed-{mb}mb"
    record = base / "seed.json"
    if record.exists():
        kept = json.loads(record.read_text())
        latest = EventLog(log_root).stream(stream).latest_offsets()
        if (
            kept["pipeline"] != pipeline.name
            or {int(p): o for p, o in kept["log"].items()} != latest
        ):
            raise SystemExit(
                f"{base} was built for {kept['pipeline']} and its stream has grown since (rounds "
                "ran on it): give --seeds a new folder"
            )
        keys = int(kept["keys"])
    else:
        pipeline.seed_events(str(log_root), stream, keys)
        child = [pipeline.name, str(log_root), stream, str(base), str(keys)]
        subprocess.run(
            [sys.executable, __file__, "--seed-child", *child],
            check=True,
            cwd=ROOT,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        )
        latest = EventLog(log_root).stream(stream).latest_offsets()
        record.write_text(json.dumps({"pipeline": pipeline.name, "keys": keys, "log": latest}))
    checkpoint = base / "checkpoint"
    return Seed(mb, pipeline, stream, keys, checkpoint, base / "out", du(checkpoint / "state"))


def _seed_child(name: str, log_root: str, stream: str, base: str, keys: str) -> None:
    """Build the seed's state in large batches, then run a few small ones with snapshots
    uploaded every second: the seed ends as a long-running job's checkpoint does, with a
    RocksDB snapshot (``V.zip`` and its SSTs) a few changelogs behind the last batch, not as
    a chain of changelogs that every new driver would have to replay in full."""
    from pyspark.sql import SparkSession

    from tidegate_runtime.driver.batch_boundary import stop_at_batch_boundary
    from tidegate_runtime.sources.eventlog_source import read_events

    builder = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    seed_conf = {
        **SPARK_CONF,
        "spark.driver.memory": "2g",
        "spark.sql.streaming.stateStore.minDeltasForSnapshot": "1",
        "spark.sql.streaming.stateStore.maintenanceInterval": "1s",
    }
    for key, value in seed_conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")

    pipeline = PIPELINES[name]

    def run(per_batch: str, **trigger: Any) -> Any:
        events = read_events(spark, log_root, stream, maxRecordsPerBatch=per_batch)
        return (
            pipeline.writer(events, f"{base}/out")
            .option("checkpointLocation", f"{base}/checkpoint")
            .outputMode(pipeline.output_mode)
            .trigger(**trigger)
            .start()
        )

    run("1000000", availableNow=True).awaitTermination()
    pipeline.tail_events(log_root, stream, int(keys))
    tail = run("250", processingTime="1 second")
    deadline = time.monotonic() + 60
    zips = Path(base, "checkpoint", "state", "0", "0")
    while time.monotonic() < deadline and not any(zips.glob("*.zip")):
        time.sleep(1)
    time.sleep(3)  # the other partition's upload, and a batch or two after it
    # Between batches, as tidegate stops a run: stop() alone interrupts a running batch (and
    # logs an aborted Spark job), leaving offsets/N without its commit for the first round.
    stop_at_batch_boundary(tail, checkpoint=f"{base}/checkpoint")
    spark.stop()


def _steady(checkpoint: Path, since: float, what: str) -> None:
    """Until the run started at ``since`` has committed STEADY_COMMITS batches."""
    _wait(
        lambda: len(commit_times(checkpoint, since)) >= STEADY_COMMITS or None,
        900,
        f"{what}: {STEADY_COMMITS} commits",
    )
    time.sleep(STEADY_SECONDS)


def steady_batch(checkpoint: Path, since: float, until: float) -> float | None:
    """The median gap between the commits of the run started at ``since``, before ``until``,
    its first (the state's load) left out."""
    times = commit_times(checkpoint, since, until)[1:]
    gaps = [b - a for a, b in pairwise(times)]
    return median(gaps) if gaps else None


def _copy(seed: Seed, checkpoint: Path, output: Path) -> None:
    for src, dest in ((seed.checkpoint, checkpoint), (seed.output, output)):
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-al", str(src), str(dest)], check=True)


# ---- bare Spark ------------------------------------------------------------------------------


def _bare_submit(
    ctx: Context, seed: Seed, tag: str, checkpoint: Path, out: Path
) -> tuple[str, float]:
    args = [
        "--root",
        str(ctx.log_root),
        "--stream",
        seed.stream,
        "--output",
        str(out),
        "--checkpoint",
        str(checkpoint),
        "--trigger",
        "1 seconds",
        "--max-records-per-batch",
        BATCH_LIMIT,
    ]
    spec = SubmitSpec(tag=tag, file=str(seed.pipeline.file), args=args, conf=SPARK_CONF)
    submitted = time.time()
    return ctx.backend.submit(spec), submitted


def bare(ctx: Context, seed: Seed, rep: int) -> Switch:
    checkpoint = ctx.tmp / f"bare-{seed.mb}-{rep}" / "checkpoint"
    out = checkpoint.parent / "out"
    _copy(seed, checkpoint, out)
    driver, since = _bare_submit(ctx, seed, f"bare-{seed.mb}-{rep}-a", checkpoint, out)
    ctx.state["bare"] = driver
    _wait(lambda: first_commit_after(checkpoint, since), 600, "bare first commit")
    _steady(checkpoint, since, "bare")
    load, t0 = os.getloadavg()[0], time.time()
    steady = steady_batch(checkpoint, since, t0)
    ctx.backend.kill(driver)
    _wait(lambda: ctx.backend.status(driver).state.terminal, 120, "bare kill")
    gone = time.time()
    driver, since = _bare_submit(ctx, seed, f"bare-{seed.mb}-{rep}-b", checkpoint, out)
    ctx.state["bare"] = driver
    committed = _wait(lambda: first_commit_after(checkpoint, since), 600, "bare new commit")
    last = last_commit_before(checkpoint, since) or t0
    return Switch(
        committed - t0, committed - last, {"old driver gone": gone - t0}, load, steady=steady
    )


# ---- tidegate ---------------------------------------------------------------------------------


def _version(ctx: Context, seed: Seed, out: Path, *, fixed: bool, number: int) -> dict[str, Any]:
    body = seed.pipeline.version(ctx.log_root, seed.stream, out, "standalone")
    body["conf"] = {
        **body["conf"],
        **SPARK_CONF,
        **ctx.state.get("executor_conf", {}),
        "spark.benchmark.version": str(number),
    }
    body["app"]["args"] += ["--max-records-per-batch", BATCH_LIMIT]
    query = body["queries"][0]
    query["trigger"] = "1 SECONDS"
    if fixed:  # the seed's copy, inside the job's checkpoint folder
        query["checkpoint_location"] = f"seed/{seed.pipeline.query}"
    return body


def _start_job(
    ctx: Context, seed: Seed, job: str, fields: dict[str, Any]
) -> tuple[int, Path, float]:
    """A job whose version 1 goes on from a copy of the seed; running, a few batches done;
    its run, checkpoint and when it was submitted."""
    base = ctx.tmp / "checkpoints" / job
    checkpoint, out = base / "seed" / seed.pipeline.query, ctx.tmp / "outputs" / job
    _copy(seed, checkpoint, out)
    body = {"name": job, "restart_policy": {"min_backoff": "1s"}, **fields}
    assert ctx.api.post("/jobs", json=body).status_code == 201
    r = ctx.api.post(f"/jobs/{job}/versions", json=_version(ctx, seed, out, fixed=True, number=1))
    assert r.status_code == 201, r.text
    since = time.time()
    op = _operate(ctx, f"/jobs/{job}/submit", {"version": 1})
    _wait(lambda: first_commit_after(checkpoint, since), 600, f"{job} first commit")
    ctx.state["job"] = job
    _steady(checkpoint, since, job)
    return int(op["run_id"]), checkpoint, since


def _update(
    ctx: Context,
    seed: Seed,
    rep: int,
    strategy: str,
    prewarm: bool = True,
    trial: bool = True,
    label: str = "",
) -> Switch:
    variant = ("" if prewarm else "-cold") + ("" if trial else "-untried") + label
    job = f"update-{strategy}{variant}-{seed.mb}-{rep}"
    run_id, checkpoint, started = _start_job(ctx, seed, job, {})
    out = ctx.tmp / "outputs" / (job if strategy == "snapshot" else f"{job}-v2")
    r = ctx.api.post(f"/jobs/{job}/versions", json=_version(ctx, seed, out, fixed=False, number=2))
    assert r.status_code == 201, r.text
    load, t0 = os.getloadavg()[0], time.time()
    body = {"version": 2, "strategy": strategy, "verify_seconds": 0, "prewarm": prewarm}
    if not trial:
        body["dry_run"] = False
    op = _operate(ctx, f"/jobs/{job}/update", body)
    # Cold, the new run is created once the old one ended; pre-warmed, its standby gets go.
    since = _at(next(s for s in op["steps"] if s["name"] in ("create_run", "go"))["at"])
    new_run = op["result"]["run_id"]
    new_checkpoint = ctx.tmp / "checkpoints" / job / str(new_run) / seed.pipeline.query
    committed = _wait(lambda: first_commit_after(new_checkpoint, since), 600, f"{job} commit")
    last = last_commit_before(checkpoint, committed) or t0
    phases = _phases(ctx, op, t0, [run_id, new_run])
    steady = steady_batch(checkpoint, started, t0)
    return Switch(
        committed - t0, committed - last, phases, load, first_batch(ctx, new_run, since), steady
    )


def update_snapshot(ctx: Context, seed: Seed, rep: int) -> Switch:
    return _update(ctx, seed, rep, "snapshot")


def update_snapshot_2cores(ctx: Context, seed: Seed, rep: int) -> Switch:
    """update-snapshot with an executor core per state partition for both versions, as
    docs/state-stores.md advises: each partition's store loads in its own task at once."""
    ctx.state["executor_conf"] = {"spark.executor.cores": "2", "spark.cores.max": "2"}
    try:
        return _update(ctx, seed, rep, "snapshot", label="-2cores")
    finally:
        ctx.state.pop("executor_conf")


def update_drain(ctx: Context, seed: Seed, rep: int) -> Switch:
    return _update(ctx, seed, rep, "drain")


def update_snapshot_cold(ctx: Context, seed: Seed, rep: int) -> Switch:
    """Not pre-warmed: the new driver is submitted once the old one has ended."""
    return _update(ctx, seed, rep, "snapshot", prewarm=False)


def update_drain_cold(ctx: Context, seed: Seed, rep: int) -> Switch:
    return _update(ctx, seed, rep, "drain", prewarm=False)


def update_drain_untried(ctx: Context, seed: Seed, rep: int) -> Switch:
    """Pre-warmed by drain without the new version's trial: its standby never ran the plan."""
    return _update(ctx, seed, rep, "drain", trial=False)


def restart(ctx: Context, seed: Seed, rep: int) -> Switch:
    job = f"restart-{seed.mb}-{rep}"
    run_id, checkpoint, started = _start_job(ctx, seed, job, {})
    load, t0 = os.getloadavg()[0], time.time()
    steady = steady_batch(checkpoint, started, t0)
    op = _operate(ctx, f"/jobs/{job}/restart", {"prewarm": True})
    since = _new_attempt_at(ctx, run_id, t0)
    committed = _wait(lambda: first_commit_after(checkpoint, since), 600, f"{job} commit")
    last = last_commit_before(checkpoint, since) or t0
    phases = _phases(ctx, op, t0, [run_id])
    return Switch(
        committed - t0, committed - last, phases, load, first_batch(ctx, run_id, since), steady
    )


def crash_hotspare(ctx: Context, seed: Seed, rep: int) -> Switch:
    job = f"crash-hotspare-{seed.mb}-{rep}"
    run_id, checkpoint, started = _start_job(ctx, seed, job, {"hot_spare": True})
    steady = steady_batch(checkpoint, started, time.time())
    switch = measure_crash(ctx, job, run_id, checkpoint, hot_spare=True, timeout=600)
    switch.steady = steady
    return switch


def flink(ctx: Context, seed: Seed, rep: int) -> Switch:
    """Flink's stop-with-savepoint + restore of its large-state job on RocksDB, with as many
    keys as the seed holds ids; its cluster runs for this round only. The largest seed fills
    for --flink-fill seconds, a smaller one in proportion to its keys (at least 60 s)."""
    fill = max(60.0, ctx.state["flink_fill"] * seed.events / ctx.state["most_keys"])
    env = {
        **os.environ,
        "FLINK_STATE_BACKEND": "rocksdb",
        "FLINK_JOB": "sql_state_job.py",
        "STATE_KEYS": str(seed.events),
        "PAYLOAD_BYTES": "16",  # an event id's worth
        "STEADY_S": str(fill),
        # Random keys: about as many distinct keys as the seed's ids within the fill time,
        # as far as its datagen keeps up (savepoint_bytes says how big it got).
        "STATE_RATE": str(max(50_000, int(seed.events * 1.5 / fill))),
        "SAVEPOINT_FORMAT": "NATIVE",  # RocksDB's own files, Flink's faster format
    }
    subprocess.run(
        ["bash", str(FLINK), "start"], check=True, capture_output=True, timeout=180, env=env
    )
    try:
        load = os.getloadavg()[0]
        done = subprocess.run(
            ["bash", str(FLINK), "bench", "1"],
            check=True,
            capture_output=True,
            text=True,
            timeout=1800,
            env=env,
        )
    finally:
        subprocess.run(["bash", str(FLINK), "stop"], capture_output=True, timeout=120, env=env)
    line = json.loads([x for x in done.stdout.splitlines() if x.startswith("{")][-1])
    figure = float(line["downtime_stop_to_first_output_s"])
    phases = {"(not a time) savepoint MB": float(line.get("savepoint_bytes") or 0) / 1e6}
    return Switch(figure, figure, phases, load)


Strategy = Callable[[Context, Seed, int], Switch]
STRATEGIES: dict[str, Strategy] = {
    "bare": bare,
    "update-snapshot": update_snapshot,
    "update-snapshot-2cores": update_snapshot_2cores,
    "update-drain": update_drain,
    "update-snapshot-cold": update_snapshot_cold,
    "update-drain-cold": update_drain_cold,
    "update-drain-untried": update_drain_untried,
    "restart": restart,
    "crash-hotspare": crash_hotspare,
    "flink": flink,
}


def _cleanup(ctx: Context, cluster: LocalStandaloneCluster) -> None:
    if "bare" in ctx.state:
        ctx.backend.kill(ctx.state.pop("bare"))
    if "job" in ctx.state:
        _operate(ctx, f"/jobs/{ctx.state.pop('job')}/cancel")
    _wait(lambda: _no_active_driver(cluster), 120, "drivers gone")


def _feed(root: Path, seeds: list[Seed], stop: threading.Event) -> None:
    """New events all along on every seed's stream: 200 a second (new ids; or updates to
    accounts spread over all of them), event time moving with the clock from the seed's."""
    started, next_id = time.time(), 10**11
    while not stop.is_set():
        at = T0 + int((time.time() - started) * 1000)
        for seed in seeds:
            seed.pipeline.fed_events(str(root), seed.stream, seed.events, at, next_id)
        next_id += 100
        stop.wait(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pipeline", choices=sorted(PIPELINES), default="dedup")
    parser.add_argument("--sizes", default="10,100", help="MB of state, comma-separated")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument(
        "--flink-fill",
        type=float,
        default=60.0,
        help="s to fill Flink's state at the largest size (smaller ones in proportion)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the work folder (drivers' logs, checkpoints)"
    )
    parser.add_argument(
        "--results",
        default="statesize",
        help="name of the figures' file (bench/results/NAME.json), written after every switch",
    )
    parser.add_argument(
        "--hold-while",
        metavar="FILE",
        help="after building the seeds, wait while FILE exists: the seeds (not measured) can "
        "be built beside other work, the rounds then run on a quiet machine",
    )
    parser.add_argument(
        "--seeds",
        type=Path,
        help="where the seeds and their event log live: built there once, reused by the next "
        "run as long as no round has run on them (the rounds feed their streams)",
    )
    parser.add_argument("--seed-child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seed_child:
        _seed_child(*args.seed_child)
        return
    chosen = [s.strip() for s in args.strategies.split(",") if s.strip()]
    unknown = set(chosen) - set(STRATEGIES)
    if unknown:
        parser.error(f"unknown strategies {sorted(unknown)}; known: {sorted(STRATEGIES)}")
    sizes = [int(x) for x in args.sizes.split(",")]
    flink_venv = Path(os.environ.get("FLINK_EXP", "/tmp/flinkexp")) / "venv" / "bin" / "python"
    if "flink" in chosen and not flink_venv.exists():
        print(f"no Flink anchor (run `bash {FLINK} setup` once): measuring without it")
        chosen.remove("flink")

    tmp = Path(tempfile.mkdtemp(prefix="tidegate-bench-statesize-"))
    seeds_dir = args.seeds or tmp
    log_root = seeds_dir / "log"
    seeds: list[Seed] = []
    for mb in sizes:
        t = time.monotonic()
        seed = build_seed(seeds_dir, log_root, mb, PIPELINES[args.pipeline])
        seeds.append(seed)
        print(
            f"seed {mb} MB of {args.pipeline}: {seed.events:,} keys, "
            f"{seed.state_bytes / 1e6:.1f} MB of state on disk, built in "
            f"{time.monotonic() - t:.0f} s",
            flush=True,
        )
    if args.hold_while:
        print(f"holding while {args.hold_while} exists", flush=True)
        while Path(args.hold_while).exists():
            time.sleep(5)
    stop_feed = threading.Event()
    feeder = threading.Thread(target=_feed, args=(log_root, seeds, stop_feed), daemon=True)
    feeder.start()
    cluster = LocalStandaloneCluster(
        tmp / "spark",
        find_free_port(),
        find_free_port(),
        find_free_port(),
        worker_cores=6,
        worker_memory="8g",
    )
    switches: dict[tuple[int, str], list[Switch]] = {}
    failures: dict[tuple[int, str], list[str]] = {}
    cluster.start()
    try:
        with scratch_database("tidegate_bench_statesize") as url:
            env = tidegate_env(url, tmp)
            with (
                serve(
                    ["-m", "app.cli", "api", "--no-migrate"], env, tmp / "api.log", "/healthz"
                ) as api,
                serve(
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
                backend = StandaloneBackend(
                    cluster.rest_url,
                    cluster.master_url,
                    ui_url=cluster.ui_url,
                    work_dir=cluster.worker_dir,
                )
                ctx = Context(
                    tmp,
                    cluster,
                    backend,
                    client,
                    log_root,
                    {"flink_fill": args.flink_fill, "most_keys": max(s.events for s in seeds)},
                )
                for rep in range(args.reps):
                    for seed in seeds:
                        shift = rep % len(chosen)
                        for strategy in chosen[shift:] + chosen[:shift]:
                            key = (seed.mb, strategy)
                            try:
                                switch = STRATEGIES[strategy](ctx, seed, rep)
                            except (
                                AssertionError,
                                TimeoutError,
                                subprocess.SubprocessError,
                                httpx.HTTPError,
                                LookupError,
                            ) as exc:
                                failures.setdefault(key, []).append(str(exc)[:300])
                                print(
                                    f"  {seed.mb} MB round {rep + 1} {strategy}: FAILED "
                                    f"{str(exc)[:300]}"
                                )
                            else:
                                switches.setdefault(key, []).append(switch)
                                print(
                                    f"  {seed.mb} MB round {rep + 1} {strategy}: stood still "
                                    f"{switch.stood_still:.1f} s, request→commit "
                                    f"{switch.request_to_commit:.1f} s (load {switch.load:.1f})",
                                    flush=True,
                                )
                            finally:
                                _cleanup(ctx, cluster)
                                # After every switch: a long run cut short keeps what it measured.
                                _save(args.results, seeds, switches, failures, args.reps)
    finally:
        stop_feed.set()
        cluster.stop()
    _report(seeds, chosen, switches, failures, args.reps)
    if args.keep:
        print(f"kept {tmp} (drivers' logs in spark/worker/driver-*/stderr)")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


def _report(
    seeds: list[Seed],
    chosen: list[str],
    switches: dict[tuple[int, str], list[Switch]],
    failures: dict[tuple[int, str], list[str]],
    reps: int,
) -> None:
    print("\noutput stood still, medians of the rounds (min-max); ratios in the same run")
    print("(steady batch: the old run's median gap between commits before the switch; beyond it:")
    print(" the pause a reader of the output sees on top of the wait between two batches)")
    rows = []
    smallest = seeds[0].mb
    for seed in seeds:
        for strategy in chosen:
            values = [s.stood_still for s in switches.get((seed.mb, strategy), [])]
            if not values:
                continue
            m = median(values)
            base = [s.stood_still for s in switches.get((seed.mb, "bare"), [])]
            fl = [s.stood_still for s in switches.get((seed.mb, "flink"), [])]
            small = [s.stood_still for s in switches.get((smallest, strategy), [])]
            done = switches.get((seed.mb, strategy), [])
            steady = [s.steady for s in done if s.steady is not None]
            rows.append(
                [
                    f"{seed.state_bytes / 1e6:.0f} MB",
                    strategy,
                    f"{m:.1f} s",
                    f"{min(values):.1f}-{max(values):.1f}",
                    ratio(m, median(base)) if base else "n/a",
                    ratio(m, median(fl)) if fl else "n/a",
                    ratio(m, median(small)) if small else "n/a",
                    f"{median(steady):.1f} s" if steady else "n/a",
                    f"{m - median(steady):.1f} s" if steady else "n/a",
                    f"{median([s.load for s in switches[(seed.mb, strategy)]]):.1f}",
                ]
            )
    print(
        table(
            rows,
            [
                "state",
                "strategy",
                "stood still",
                "spread",
                "vs bare",
                "vs flink",
                f"vs {smallest} MB",
                "steady batch",
                "beyond it",
                "load",
            ],
        )
    )
    # A drain fixes the sources' end offsets at its request: events after it are output by the
    # new version only, so they wait from the request to its first commit, however short the
    # gap between the drained run's last commit (its flush) and the new driver's first.
    for (mb, strategy), done in switches.items():
        waits = [
            s.request_to_commit - s.phases[DRAIN_REQUESTED]
            for s in done
            if DRAIN_REQUESTED in s.phases
        ]
        if waits:
            print(
                f"\n{mb} MB {strategy}: events after the drain request waited "
                f"{median(waits):.1f} s ({min(waits):.1f}-{max(waits):.1f}) for the new version"
            )
    for (mb, strategy), done in switches.items():
        names = list(dict.fromkeys(name for s in done for name in s.phases))
        if names:
            print(f"\n{mb} MB {strategy}: when each phase ended, s since the request (median)")
            for name in sorted(names, key=lambda n: median([s.phases.get(n, 0.0) for s in done])):
                seen = [s.phases[name] for s in done if name in s.phases]
                print(f"  {median(seen):7.2f}  {name}")
    for (mb, strategy), done in switches.items():
        names = list(dict.fromkeys(name for s in done for name in s.first_batch))
        if names:
            print(f"\n{mb} MB {strategy}: the new driver's first batch (median)")
            for name in names:
                seen = [s.first_batch[name] for s in done if name in s.first_batch]
                print(f"  {median(seen):14,.0f}  {name}")
    for key, errors in failures.items():
        print(f"{key}: {len(errors)} of {reps} switches FAILED: {errors}")


def _save(
    name: str,
    seeds: list[Seed],
    switches: dict[tuple[int, str], list[Switch]],
    failures: dict[tuple[int, str], list[str]],
    reps: int,
) -> None:
    save(
        name,
        {
            "rounds": reps,
            "seeds": [
                {
                    "mb": s.mb,
                    "pipeline": s.pipeline.name,
                    "event_ids": s.events,  # keys: event ids, or accounts
                    "state_bytes": s.state_bytes,
                }
                for s in seeds
            ],
            "switches": {
                f"{mb}mb/{strategy}": [
                    {
                        "stood_still_s": x.stood_still,
                        "request_to_commit_s": x.request_to_commit,
                        "load": x.load,
                        "phases_s": x.phases,
                        "first_batch": x.first_batch,
                        "steady_batch_s": x.steady,
                    }
                    for x in values
                ]
                for (mb, strategy), values in switches.items()
            },
            "failures": {f"{mb}mb/{strategy}": e for (mb, strategy), e in failures.items()},
        },
    )


if __name__ == "__main__":
    main()
