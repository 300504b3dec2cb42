"""Onyx's resume points and Jet's save-snapshot on real Spark, the output checked against the
ground truth each time: a new job takes the state of **two other jobs** (merged into one
version, each query **renamed**), one of them on the standalone cluster from a
**save-snapshot** (export, then stop); the merged job stops, and its next versions start from
**run coordinates** (no snapshot): a resume point **built from coordinates**, and a version
that **removed a query**, whose state is ignored; last, one query's state is **split** into
two queries, the new one given its offsets and its state separately (Onyx's ``:input`` and
``:windows``). Every window of each stream is written exactly once over all the jobs' runs,
and the split-off query writes exactly the windows not yet written when it started."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipelines.ground_truth import expected_windowed_counts
from tests.operations.test_lifecycle_e2e import _job, _operate
from tests.snapshots.test_snapshots_e2e import KEY_DDL, VALUE_DDL
from tests.support.backends import Target
from tests.support.chaos.windowed import committed_windows
from tests.support.e2e import APPS, SPARK_TEST_CONF
from tests.support.sizes import FULL
from tests.support.stack import ROOT, Stack, wait_until
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_producer import produce

pytestmark = pytest.mark.e2e

T0 = 1_767_225_600_000
STREAMS = ("clicks", "views")


def _expected(root: Path, stream: str) -> list[tuple[Any, ...]]:
    return sorted(
        (
            (w.window_start_ms, w.key, w.count, w.sum)
            for w in expected_windowed_counts(root, stream)
        ),
        key=repr,
    )


def _exact(root: Path, stream: str, out: Path) -> None:
    """Every window the watermark closed is out, once."""
    wait_until(lambda: committed_windows(out), lambda rows: rows == _expected(root, stream), 180)


def _produce(root: Path, at_s: int, count: int = 100) -> None:
    for stream in STREAMS:
        produce(
            str(root), stream, 2, rate=0, count=count, start_ts_ms=T0 + at_s * 1000, ts_step_ms=400
        )


def _query(root: Path, stream: str) -> dict[str, Any]:
    return {
        "name": f"{stream}_counts",
        "sources": [
            {"name": stream, "kind": "eventlog", "options": {"root": str(root), "stream": stream}}
        ],
        "stateful_operators": [
            {"kind": "tumbling_window", "key_schema": KEY_DDL, "value_schema": VALUE_DDL}
        ],
        "output_mode": "append",
        "trigger": "1 SECONDS",
    }


@pytest.mark.timeout(1200)
def test_state_from_two_jobs_merged_renamed_then_resumed_from_run_coordinates(
    clusters: Stack, cluster_python: str, team_pipelines: Path, tmp_path: Path
) -> None:
    stack, root = clusters, tmp_path / "log"
    out = {s: tmp_path / f"out-{s}" for s in STREAMS}
    log = EventLog(root)
    for stream in STREAMS:
        log.create_stream(stream, 2)
    _produce(root, 0, 200)
    standalone = Target("standalone", cluster_python, team_pipelines)

    # Job A (standalone) counts clicks, job B (runner) counts views: windowed_counts each.
    runs = {}
    for job, stream, cluster in (("onyx-a", "clicks", "standalone"), ("onyx-b", "views", "runner")):
        _job(stack, job)
        app = (
            standalone.pipeline("windowed_counts.py")
            if cluster == "standalone"
            else str(ROOT / "pipelines" / "windowed_counts.py")
        )
        conf = (
            standalone.conf()
            if cluster == "standalone"
            else {**SPARK_TEST_CONF, "spark.sql.session.timeZone": "UTC"}
        )
        body = {
            "app": {
                "file": app,
                "args": ["--root", str(root), "--stream", stream, "--output", str(out[stream])],
            },
            "cluster": cluster,
            "conf": conf,
            "queries": [{**_query(root, stream), "name": "windowed_counts"}],
        }
        r = stack.client.post(f"/jobs/{job}/versions", json=body)
        assert r.status_code == 201, r.text
        submitted = _operate(stack, job, "submit", {"version": r.json()["number"]})
        assert submitted["state"] == "succeeded", submitted
        runs[job] = submitted["run_id"]
    for stream in STREAMS:
        _exact(root, stream, out[stream])
    # Jet's save-snapshot: export, then stop, in one operation (A on the standalone cluster).
    for job in ("onyx-a", "onyx-b"):
        saved = _operate(stack, job, "snapshots", {"name": "saved", "stop": True})
        assert saved["state"] == "succeeded", saved
        assert stack.run(runs[job])["state"] == "stopped"

    # Job C takes both states, each query under a new name: on the standalone cluster under
    # TIDEGATE_SUITE=full, on the runner in CI (its three starts from a resume point are a
    # dry-run driver and a driver each; on standalone each is a driver and an executor JVM in
    # cluster deploy mode, the slowest to start). Job A's submit and save-snapshot keep the
    # standalone cluster in CI's story.
    c_cluster = Target("standalone" if FULL else "runner", cluster_python, team_pipelines)
    _job(stack, "onyx-c")
    args = ["--root", str(root), "--clicks-output", str(out["clicks"])]
    args += ["--views-output", str(out["views"])]

    def version(*streams: str, copy: Path | None = None) -> int:
        queries = [_query(root, s) for s in streams]
        extra = ["--only", streams[0]] if len(streams) == 1 else []
        if copy is not None:
            queries.append({**_query(root, "clicks"), "name": "clicks_copy"})
            extra += ["--copy-output", str(copy)]
        body = {
            "app": {"file": str(APPS / "two_windowed.py"), "args": args + extra},
            "cluster": c_cluster.cluster,
            "conf": c_cluster.conf(),
            "queries": queries,
        }
        r = stack.client.post("/jobs/onyx-c/versions", json=body)
        assert r.status_code == 201, r.text
        return int(r.json()["number"])

    both, clicks_only = version(*STREAMS), version("clicks")
    merged = {
        f"{stream}_counts": {
            "mode": "resume",
            "snapshot": "saved",
            "job": job,
            "query": "windowed_counts",
        }
        for stream, job in (("clicks", "onyx-a"), ("views", "onyx-b"))
    }
    compat = stack.client.post(
        "/jobs/onyx-c/compatibility", json={"version": both, "resume_point": merged}
    ).json()
    assert compat["compatible"] and sorted(compat["resume"]) == ["clicks_counts", "views_counts"]
    started = _operate(stack, "onyx-c", "submit", {"version": both, "resume_point": merged})
    assert started["state"] == "succeeded", started
    merged_run = started["run_id"]
    _produce(root, 100)  # the windows open at the snapshots close with this input
    for stream in STREAMS:
        _exact(root, stream, out[stream])

    # Stopped; the next version starts from the run's coordinates, not a snapshot: Onyx's
    # build-resume-point maps each query by name; the views query is not in this version, so
    # its state is ignored (Jet: a removed query).
    assert _operate(stack, "onyx-c", "stop")["state"] == "succeeded"
    coordinates = stack.client.get("/jobs/onyx-c/snapshot-coordinates").json()
    assert coordinates["run"] == merged_run and coordinates["uncommitted"] == []
    built = stack.client.post(
        "/jobs/onyx-c/resume-points/build",
        json={"version": clicks_only, "coordinates": coordinates["coordinates"]},
    )
    assert built.status_code == 200, built.text
    built_body = built.json()
    assert built_body["compatible"] and built_body["dropped"] == ["views_counts"], built_body
    assert built_body["resume_point"]["clicks_counts"]["run"] == merged_run
    resumed = _operate(
        stack,
        "onyx-c",
        "submit",
        {"version": clicks_only, "resume_point": built_body["resume_point"]},
    )
    assert resumed["state"] == "succeeded", resumed
    views_before = committed_windows(out["views"])
    _produce(root, 200)
    _exact(root, "clicks", out["clicks"])
    assert committed_windows(out["views"]) == views_before  # nobody reads views any more
    assert _operate(stack, "onyx-c", "stop")["state"] == "succeeded"

    # Split: the clicks query's state goes on in clicks_counts and, a copy, in a new
    # clicks_copy, whose offsets and state are given apart, both from the stopped run.
    split_run = resumed["run_id"]
    copy_out = tmp_path / "out-clicks-copy"
    split = version("clicks", copy=copy_out)
    at_run = {"mode": "resume", "run": split_run, "query": "clicks_counts"}
    point = {"clicks_counts": at_run, "clicks_copy": {"offsets": at_run, "state": at_run}}
    compat = stack.client.post(
        "/jobs/onyx-c/compatibility", json={"version": split, "resume_point": point}
    ).json()
    assert compat["compatible"] and sorted(compat["resume"]) == ["clicks_copy", "clicks_counts"]
    written = committed_windows(out["clicks"])
    copied = _operate(stack, "onyx-c", "submit", {"version": split, "resume_point": point})
    assert copied["state"] == "succeeded", copied
    _produce(root, 300)
    _exact(root, "clicks", out["clicks"])
    # The copy carries the open windows' state: their counts include records read before the
    # split, so it writes the ground truth's windows that were not yet written, exactly.
    rest = sorted(set(_expected(root, "clicks")) - set(written), key=repr)
    wait_until(lambda: committed_windows(copy_out), lambda rows: rows == rest, 180)
    assert _operate(stack, "onyx-c", "stop")["state"] == "succeeded"
