"""The benchmarks at a tiny size, so they cannot rot unnoticed: each script runs as a
subprocess (as `make bench` runs it) against the test PostgreSQL server, bounded in time,
and must print its table and write its figures, baseline ratio included, as JSON.

The figures go to a tmp dir (TIDEGATE_BENCH_RESULTS), never to bench/results/. No figure is
judged here: at this size and on a shared machine they are noise; only their presence is.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.sizes import FULL

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 50  # seconds per script, well under a minute; the three take ~40 s together


@pytest.fixture(scope="module")
def server_url(database_url: str) -> str:
    """The test PostgreSQL server (the benchmarks create and drop their own databases)."""
    base, _, query = database_url.partition("?")
    return f"{base.rsplit('/', 1)[0]}/postgres" + (f"?{query}" if query else "")


def _run(
    script: str,
    args: list[str],
    server_url: str,
    out: Path,
    limit: float = LIMIT,
    name: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """Run ``bench/<script>.py``; its figures, saved as ``name`` (default: the script's)."""
    name = name or script
    env = {
        **os.environ,
        "TIDEGATE_BENCH_DATABASE_URL": server_url,
        "TIDEGATE_BENCH_RESULTS": str(out),
        "TMPDIR": str(out),  # the scripts' scratch dirs (mkdtemp) go with the test's tmp dir
    }
    try:
        proc = subprocess.run(
            [sys.executable, f"bench/{script}.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=limit,
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"bench/{script}.py took over {limit}s:\n{e.stdout!s:.3000}")
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    path = out / f"{name}.json"
    assert path.exists(), proc.stdout[-2000:]
    assert f"figures written to {path}" in proc.stdout
    figures = json.loads(path.read_text())
    assert figures["bench"] == name
    assert figures["machine"]["nproc"] >= 1
    return proc.stdout, figures


def _positive(x: Any) -> bool:
    return isinstance(x, int | float) and x > 0 and math.isfinite(x)


def test_api(server_url: str, tmp_path: Path) -> None:
    args = "--sizes 50,100 --startpoints 200 --snapshots 100 --concurrency 1,4 --rounds 1 "
    args += "--requests 20 --seconds 0.5 --samples 3"
    stdout, figures = _run("api", args.split(), server_url, tmp_path)
    scenarios = (
        "GET /jobs/{job}",
        "GET /jobs (page of 50)",
        "GET /snapshots (page of 50)",
        "PUT /jobs/{job}/startpoints",
    )
    for name in scenarios:
        assert f"\n{name}\n" in stdout
        for level in ("1", "4"):
            fig = figures["throughput"][name][level]
            assert fig["tidegate"]["errors"] == 0 and fig["baseline"]["errors"] == 0, fig
            assert _positive(fig["tidegate"]["rps"]) and _positive(fig["baseline"]["rps"])
            assert _positive(fig["ratio"]["rps"]) and _positive(fig["ratio"]["p50"])
    assert "req/s ratio" in stdout
    grown = figures["growth"]["100"]
    assert grown["jobs"] == 100 and grown["snapshots"] == 100
    for key in (
        "first page",
        "deep page (cursor)",
        "baseline deep page",
        "snapshots first page",
        "snapshots deep page (cursor)",
        "baseline snapshots first page",
        "baseline snapshots deep page",
    ):
        assert _positive(grown["median_ms"][key]), key
    assert "vs smallest" in stdout
    assert figures["list_query_count"] >= 1 and figures["snapshots_query_count"] >= 1


def test_reaction(server_url: str, tmp_path: Path) -> None:
    stdout, figures = _run(
        "reaction", ["--samples", "2", "--poll-samples", "1"], server_url, tmp_path
    )
    for key in ("notify_find", "notify_submit", "notify_stop", "poll_find", "poll_submit"):
        assert _positive(figures[key]["p50_ms"]) and _positive(figures[key]["p99_ms"]), key
    assert _positive(figures["notify_vs_poll_p50_ratio"])
    assert "vs poll-only p50" in stdout


def test_startpoints(server_url: str, tmp_path: Path) -> None:
    stdout, figures = _run(
        "startpoints", ["--partitions", "100", "--rounds", "1"], server_url, tmp_path
    )
    assert figures["partitions"] == 100
    for key in ("put_ms", "preview_ms", "copy_ms", "put_vs_copy_ratio", "preview_vs_copy_ratio"):
        assert _positive(figures[key]), key
    assert "vs COPY" in stdout


def test_metrics(server_url: str, tmp_path: Path) -> None:
    # Two API processes start (the 0-job baseline has its own store): ~15 s each when the
    # machine is busy, hence a longer bound than the others'.
    args = ["--jobs", "20", "--rounds", "1", "--samples", "2"]
    stdout, figures = _run("metrics", args, server_url, tmp_path, limit=90)
    assert figures["jobs"] == 20 and figures["store_series"] > 20 * 20
    for name in ("GET /metrics (20 jobs)", "GET /metrics (0 jobs)", "GET /healthz"):
        assert _positive(figures["requests"][name]["p50_ms"]), name
    assert _positive(figures["ratio_vs_empty_scrape"]) and _positive(figures["ratio_vs_healthz"])
    assert "vs 0-job scrape" in stdout and "load average" in stdout


def test_fleet(server_url: str, tmp_path: Path) -> None:
    # Six servers start at once (2 API, 2 worker, 2 bare baselines): ~15 s when the machine is
    # busy, hence a longer bound than the others'.
    args = "--jobs 20 --waiting 5 --warm-up 1 --rest-seconds 1 --rounds 1 --requests 40 "
    args += "--seconds 0.5 --deaths 2 --operations 2"
    stdout, figures = _run("fleet", args.split(), server_url, tmp_path, limit=90)
    assert figures["spares"]["ready"] == 5 and figures["spares"]["submitted"] >= 5
    for window in ("rest_no_spares", "rest_spares", "rest_silent"):
        # At rest with 20 runs a 1 s window may hold no CPU tick of a process: present, >= 0.
        cores = figures[window]["cores"]
        for key in ("api", "worker", "api+worker", "machine (all processes)"):
            assert isinstance(cores[key], float) and cores[key] >= 0, (key, cores)
        assert figures[window]["listings_per_s"] >= 0
    for name in ("GET /jobs/{job}", "GET /jobs (page of 50)"):
        read = figures["reads"][name]
        assert read["tidegate"]["errors"] == 0 and read["baseline"]["errors"] == 0, read
        assert _positive(read["ratio"]["rps"]) and _positive(read["tidegate"]["p99_ms"])
    assert figures["death_to_go"]["samples"] == 2 and _positive(figures["death_to_go"]["p99_ms"])
    assert _positive(figures["stop_to_delete"]["p99_ms"])
    phases = figures["connections"]
    assert phases["rest, spares waiting"]["max_waiting"] == 5
    assert phases["rest, spares waiting"]["max"]["api (both)"] >= 1
    assert "req/s ratio" in stdout and "death -> spare hears go" in stdout


def test_snapshots_on_the_rocksdb_layout(server_url: str, tmp_path: Path) -> None:
    """Issue 25: export, second export and restore of a RocksDB-shaped checkpoint (shared
    SSTs, changelogs), against cp -r, with the process's memory growth."""
    args = ["--layout", "rocksdb", "--size-mb", "8", "--batches", "20", "--reps", "1"]
    stdout, figures = _run("snapshots", args, server_url, tmp_path, name="snapshots-8mb-rocksdb")
    assert figures["layout"] == "rocksdb" and "restore / cp -r" in stdout
    for ratio in ("export_over_cp", "restore_over_cp", "second_over_first_bytes"):
        assert _positive(figures["ratios"][ratio]), ratio
    # The second export writes the new changelogs only: never the shared SSTs again.
    assert figures["ratios"]["second_over_first_bytes"] < 0.5, figures
    assert figures["peak_rss_growth_mb"] >= 0


@pytest.mark.spark
def test_query_start(server_url: str, tmp_path: Path) -> None:
    """Two local Sparks, one on each variant of the zips, each timing one query's start
    after its first."""
    stdout, figures = _run(
        "query_start",
        ["--rounds", "1", "--queries", "2"],
        server_url,
        tmp_path,
        limit=180,
        name="query-start",
    )
    for variant in ("shipped", "precompiled"):
        seconds = figures["seconds"][variant]
        assert len(seconds) == 1 and _positive(seconds[0]), variant
    assert "vs shipped" in stdout


@pytest.mark.e2e
@pytest.mark.skipif(not FULL, reason="3.5 minutes of Spark and Kafka: make chaos runs it")
def test_kafka_upgrade(server_url: str, tmp_path: Path) -> None:
    """Issue 52: the bare Spark baseline once on a Kafka topic (a real broker, a Spark
    standalone cluster, tidegate's API and worker: all started and stopped by the script),
    no Flink. Two driver starts and a Kafka broker on 2 cores: 205 s seen at a load average
    of 17, hence the longest bound here."""
    args = ["--reps", "1", "--strategies", "bare"]
    stdout, figures = _run(
        "kafka_upgrade", args, server_url, tmp_path, limit=420, name="kafka-upgrade"
    )
    assert figures["source"] == "kafka" and figures["failures"] == {}, figures
    bare = figures["median_s"]["bare"]
    assert _positive(bare["request_to_commit"]) and _positive(bare["stood_still"]), bare
    assert len(figures["load_avg_start"]) == 3 and len(figures["load_avg_end"]) == 3
    assert "vs bare" in stdout and "load average" in stdout
    assert figures["checkpoints"] == "local", figures


def test_kafka_upgrade_reads_the_commit_signal_from_a_bucket() -> None:
    """Issue 52, ``--checkpoints s3`` without Spark: the commits of a checkpoint in a bucket on
    moto's server are read back through s3fs, each with its write time to the microsecond
    (S3's LastModified has whole seconds), a temporary file not; a checkpoint with none has
    none; a bad choice of ``--checkpoints`` is refused by the argument parser."""
    import fsspec

    from app.devtools.s3_server import create_bucket, moto_server, s3fs_options
    from bench.kafka_upgrade import bucket_commits
    from bench.upgrade import first_commit_after, last_commit_before

    with moto_server() as endpoint:
        bucket = create_bucket(endpoint)
        fs = fsspec.filesystem("s3", **s3fs_options(endpoint), skip_instance_cache=True)
        written = bucket_commits(fs)
        checkpoint = f"s3a://{bucket}/checkpoints/job/1/windowed_counts"
        assert written(checkpoint) == []
        between = []  # (just before, just after) each commit's PUT
        for name in ("0", "1", ".2.tmp", "2"):
            before = time.time()
            fs.pipe(f"{bucket}/checkpoints/job/1/windowed_counts/commits/{name}", b"v1\n{}")
            if name.isdigit():
                between.append((before, time.time()))
            time.sleep(0.2)
        seen = sorted(written(checkpoint))
        assert len(seen) == 3, seen
        # (moto's clock keeps microseconds: a millisecond's slack for the rounding)
        assert all(a - 1e-3 <= t <= b + 1e-3 for t, (a, b) in zip(seen, between, strict=True))
        assert first_commit_after(checkpoint, between[0][1], written) == seen[1]
        assert last_commit_before(checkpoint, between[2][0], written) == seen[1]
        assert written(f"s3a://{bucket}/checkpoints/job/2/windowed_counts") == []
    proc = subprocess.run(
        [sys.executable, "bench/kafka_upgrade.py", "--checkpoints", "gcs"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "invalid choice: 'gcs'" in proc.stderr, proc.stderr
