"""Drain on real Spark: events keep arriving; the drain fixes end offsets, processes up to
them, flushes every window (the last open ones too), and the next version, with another
state entirely, starts exactly at the drained offsets: nothing lost, nothing twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.ground_truth import expected_enrich, expected_windowed_counts
from tests.operations.test_lifecycle_e2e import _job, _operate, _output, _windowed_version
from tests.support.backends import Target
from tests.support.chaos.harness import enrich_rows
from tests.support.chaos.windowed import producing
from tests.support.e2e import APPS, SPARK_TEST_CONF
from tests.support.sizes import under_chaos
from tests.support.stack import Stack, assert_switch, wait_until, watching_standbys
from tidegate_runtime.sources.eventlog import EventLog, NewRecord
from tidegate_runtime.sources.eventlog_producer import produce

pytestmark = pytest.mark.e2e


T0 = 1_767_225_600_000


def _enrich_version(stack: Stack, target: Target, job: str, root: Path, out: Path) -> int:
    body = {
        "app": {
            "file": target.pipeline("enrich.py"),
            "args": [
                "--root",
                str(root),
                "--stream",
                "clicks",
                "--output",
                str(out),
                "--query-name",
                "windowed_counts",
            ],
        },
        "cluster": target.cluster,
        "conf": target.conf(),
        "queries": [
            {
                # Same name, another state entirely: only a drain makes this change safe.
                "name": "windowed_counts",
                "sources": [
                    {
                        "name": "clicks",
                        "kind": "eventlog",
                        "options": {"root": str(root), "stream": "clicks"},
                    }
                ],
                "output_mode": "append",
                "trigger": "1 SECONDS",
            }
        ],
    }
    r = stack.client.post(f"/jobs/{job}/versions", json=body)
    assert r.status_code == 201, r.text
    return int(r.json()["number"])


def _bad_release(stack: Stack, target: Target, job: str, root: Path, out: Path) -> int:
    """The windowed version as a bad release (tests/support/apps/bad_release.py)."""
    clicks = {
        "name": "clicks",
        "kind": "eventlog",
        "options": {"root": str(root), "stream": "clicks"},
    }
    body = {
        "app": {
            "file": str(APPS / "bad_release.py"),
            "args": ["--root", str(root), "--stream", "clicks", "--output", str(out)],
        },
        "cluster": target.cluster,
        "conf": target.conf(),
        "queries": [
            {
                "name": "windowed_counts",
                "sources": [clicks],
                "stateful_operators": [{"kind": "tumbling_window"}],
                "output_mode": "append",
                "trigger": "1 SECONDS",
            }
        ],
    }
    r = stack.client.post(f"/jobs/{job}/versions", json=body)
    assert r.status_code == 201, r.text
    return int(r.json()["number"])


def _json_rows(out: Path) -> list[tuple[int, int, float]]:
    rows = []
    for part in sorted(out.glob("part-*.json")):
        for line in part.read_text().splitlines():
            row = json.loads(line)
            rows.append((row["partition"], row["offset"], row["amount"]))
    return sorted(rows)


def test_update_by_drain_replaces_the_state_with_nothing_lost_or_twice(
    clusters: Stack, target: Target, tmp_path: Path
) -> None:
    """One call, while events keep arriving: the 1-minute windowed version drains (its last
    windows flushed) and a version with a changed aggregation (2-minute windows: state that
    cannot be carried over) starts on a fresh checkpoint at the next record of every
    partition. Drained in turn (a plain drain, events still arriving), the two outputs
    together count every record exactly once; a third version, another app entirely, then
    starts from startpoints set by hand at that drain's end offsets and reads exactly the
    records after them. (One job for both kinds of drain and both ways to continue: each
    start of a driver costs a JVM.)"""
    stack, job = clusters, f"drain-update-{target.cluster}"
    root, out, out2, out3 = (tmp_path / d for d in ("log", "out", "out2", "out3"))
    stream = EventLog(root).create_stream("clicks", 2)
    produce(str(root), "clicks", 2, rate=0, count=300, start_ts_ms=T0, ts_step_ms=400)
    _job(stack, job)
    v1 = _windowed_version(stack, job, target, root, out)
    v2 = _windowed_version(stack, job, target, root, out2, window="2 minutes")
    submit = _operate(stack, job, "submit", {"version": v1})
    assert submit["state"] == "succeeded", submit
    old_run = submit["run_id"]
    wait_until(
        lambda: stack.run(old_run)["progress"].get("windowed_counts", {}).get("batch_id"),
        lambda b: b is not None,
        180,
    )
    # Pre-warmed on the runner, cold on standalone: each path on real Spark, the other path
    # of each backend in test_snapshots.py.
    prewarm = target.cluster == "runner"
    # A bad release (its parser raises on every record) fails its trial batch over the last
    # records the old run committed, before anything drains: the old run goes on untouched.
    bad = _bad_release(stack, target, job, root, tmp_path / "out-bad")
    refused = _operate(
        stack, job, "update", {"version": bad, "strategy": "drain", "prewarm": prewarm}
    )
    assert refused["state"] == "failed", refused
    assert "failed its trial" in refused["error"], refused["error"]
    assert "ValueError: cannot parse key" in refused["error"], refused["error"]
    assert "request_drain" not in [s["name"] for s in refused["steps"]], refused["steps"]
    assert stack.run(old_run)["state"] == "running" and not stack.run(old_run)["drain"]
    assert not (tmp_path / "out-bad").exists()  # a trial writes to the noop sink only
    body = {"version": v2, "strategy": "drain", "verify_seconds": 5, "prewarm": prewarm}
    with producing(stream, T0 + 130_000), watching_standbys(stack, job) as watch:
        update = _operate(stack, job, "update", body)
    assert update["state"] == "succeeded", update
    result = update["result"]
    assert_switch(stack, job, update, watch, prewarm)
    # The good version passed its trial first (pre-warmed: in the standby that then took over).
    trial = next(s["detail"] for s in update["steps"] if s["name"] == "dry_run")
    assert trial["ok"] and trial["trial"] and trial["checked"] == {"windowed_counts": 0}, trial
    assert result["previous_run_id"] == old_run and result["strategy"] == "drain"
    end = {int(p): o for p, o in result["end_offsets"]["clicks"].items()}
    assert stack.run(old_run)["state"] == "drained"
    new = stack.run(result["run_id"])
    assert new["state"] == "running" and new["version"] == v2
    # The old version: every 1-minute window up to the drained offsets, the open ones too.
    expected = sorted(
        (w.window_start_ms, w.key, w.count, w.sum)
        for w in expected_windowed_counts(
            root, "clicks", {p: (0, o) for p, o in end.items()}, closed_only=False
        )
    )
    assert _output(out) == expected
    # The startpoints were consumed by the new run's first batches: a restart reapplies none.
    view = wait_until(
        lambda: stack.client.get(f"/jobs/{job}/startpoints").json(),
        lambda v: v["pending"] == [],
        120,
    )
    (applied,) = view["applied"]
    assert applied["run_id"] == new["id"] and applied["after_offsets"] == {
        str(p): o for p, o in end.items()
    }
    # The new version, drained too, while events keep arriving (event times past all the
    # earlier ones: none is late): 2-minute windows of exactly the records from the first
    # drain's offsets to the second's, the open windows flushed, nothing past the end.
    with producing(stream, T0 + 130_000 + 400 * 3000, every=0.2):
        r = stack.client.post(f"/jobs/{job}/drain", json={"timeout_seconds": 240})
        assert r.status_code == 202, r.text
        drained = stack.wait_operation(r.json()["id"], 300)
    assert drained["state"] == "succeeded", drained
    run2 = stack.run(new["id"])
    assert run2["state"] == "drained" and run2["drain"]["drained_at"]
    assert drained["result"]["end_offsets"] == run2["drain"]["end_offsets"]
    assert stack.client.get(f"/jobs/{job}").json()["state"] == "drained"
    end2 = {int(p): o for p, o in drained["result"]["end_offsets"]["clicks"].items()}
    assert all(end2[p] <= stream.latest_offsets()[p] for p in end2)
    expected2 = sorted(
        (w.window_start_ms, w.key, w.count, w.sum)
        for w in expected_windowed_counts(
            root,
            "clicks",
            {p: (end[p], end2[p]) for p in end},
            window_ms=120_000,
            closed_only=False,
        )
    )
    assert _output(out2) == expected2
    counted = sum(row[2] for row in _output(out)) + sum(row[2] for row in _output(out2))
    assert counted == sum(end2.values())  # every record up to the end, once (offsets from 0)

    # An incompatible next version (another app, stateless), fresh checkpoint, from
    # startpoints set by hand at exactly the drained offsets.
    v3 = _enrich_version(stack, target, job, root, out3)
    r = stack.client.put(
        f"/jobs/{job}/startpoints",
        json={
            "startpoints": [
                {"source": "clicks", "partition": p, "type": "OFFSET", "value": o}
                for p, o in end2.items()
            ]
        },
    )
    assert r.status_code == 200, r.text
    third = _operate(stack, job, "submit", {"version": v3})
    assert third["state"] == "succeeded", third
    latest = stream.latest_offsets()
    want3 = sorted(
        (r.partition, r.offset, r.amount)
        for r in expected_enrich(root, "clicks", {p: (end2[p], latest[p]) for p in end2})
    )
    wait_until(lambda: _json_rows(out3), lambda rows: rows == want3, 180)
    assert _operate(stack, job, "stop")["state"] == "succeeded"


@under_chaos(
    "tests/worker/test_kafka_outage.py::test_a_drain_with_its_broker_down_stops_cleanly_and_a_"
    "later_drain_is_exact: a drain that runs out of time fails, the run stopped at a batch "
    "boundary with nothing committed past what it read; restarted, a later drain is exact"
)
def test_a_drain_that_times_out_stops_cleanly_and_a_later_drain_finishes_exactly(
    runner: Stack, tmp_path: Path
) -> None:
    """A slow drain (10 records per batch) runs out of time: the run stops at a batch
    boundary, before the marker; restarted from its checkpoint it goes on, uncapped, and a
    second drain flushes every window once."""
    stack, job = runner, "drain-timeout"
    root, out = tmp_path / "log", tmp_path / "out"
    stream = EventLog(root).create_stream("clicks", 2)

    def append(first: int, count: int) -> None:
        # The same event times in both partitions: read 5 + 5 per batch, neither partition
        # runs ahead of the other, so the watermark never makes the slower one's records late.
        for n in range(first, first + count):
            for p in range(2):
                stream.append(p, [NewRecord(T0 + n * 400, f"k{n % 5}", str(n % 97))])

    append(0, 30)
    _job(stack, job)
    version = _windowed_version(stack, job, "runner", root, out, max_records_per_batch=10)
    submit = _operate(stack, job, "submit", {"version": version})
    assert submit["state"] == "succeeded", submit
    run_id = submit["run_id"]
    wait_until(
        lambda: stack.run(run_id)["progress"].get("windowed_counts", {}).get("batch_id"),
        lambda b: b is not None,
        180,
    )
    append(30, 120)
    r = stack.client.post(f"/jobs/{job}/drain", json={"timeout_seconds": 10})
    assert r.status_code == 202, r.text
    failed = stack.wait_operation(r.json()["id"], 240)
    assert failed["state"] == "failed", failed
    assert "did not finish within 10s" in failed["error"], failed["error"]
    assert failed["result"]["run_state"] == "stopped"
    assert failed["result"]["backlog"]["windowed_counts"]["records"] > 0
    run = stack.run(run_id)
    assert run["state"] == "stopped" and not run["drain"].get("drained_at")
    # Restarted on its checkpoint, it goes on past the old cap, and drains for good.
    assert _operate(stack, job, "restart")["state"] == "succeeded"
    r = stack.client.post(f"/jobs/{job}/drain", json={"timeout_seconds": 600})
    assert r.status_code == 202, r.text
    drained = stack.wait_operation(r.json()["id"], 600)
    assert drained["state"] == "succeeded", drained
    end = {int(p): o for p, o in drained["result"]["end_offsets"]["clicks"].items()}
    assert end == stream.latest_offsets()
    expected = sorted(
        (w.window_start_ms, w.key, w.count, w.sum)
        for w in expected_windowed_counts(root, "clicks", closed_only=False)
    )
    assert _output(out) == expected
    refused = stack.client.post(f"/jobs/{job}/restart")
    assert refused.status_code == 409 and "drained" in refused.json()["detail"]


def test_a_chain_drains_upstream_first_and_a_file_source_drains_bounded(
    runner: Stack, tmp_path: Path
) -> None:
    """``enrich`` (event log -> JSON files) feeds ``totals`` (Spark's file source over those
    files -> JSON). The drain caps and finishes ``enrich`` first; only then does ``totals``,
    whose source cannot be capped, run on its checkpoint with AvailableNow to the end of
    what ``enrich`` wrote: every record of the log up to the end offsets reaches the end of
    the chain, once, while events keep arriving."""
    stack, job = runner, "drain-chain"
    root, middle, out = tmp_path / "log", tmp_path / "middle", tmp_path / "out"
    stream = EventLog(root).create_stream("clicks", 2)
    produce(str(root), "clicks", 2, rate=0, count=200, start_ts_ms=T0, ts_step_ms=400)
    _job(stack, job)
    body = {
        "app": {
            "file": str(APPS / "chain.py"),
            "args": [
                "--root",
                str(root),
                "--stream",
                "clicks",
                "--middle",
                str(middle),
                "--output",
                str(out),
            ],
        },
        "cluster": "runner",
        "conf": {**SPARK_TEST_CONF, "spark.sql.session.timeZone": "UTC"},
        "queries": [
            {
                "name": "enrich",
                "sources": [
                    {
                        "name": "clicks",
                        "kind": "eventlog",
                        "options": {"root": str(root), "stream": "clicks"},
                    }
                ],
                "trigger": "1 SECONDS",
            },
            {
                "name": "totals",
                "sources": [{"name": "enriched", "kind": "file", "options": {"path": str(middle)}}],
                "upstream": ["enrich"],
                "trigger": "1 SECONDS",
            },
        ],
    }
    r = stack.client.post(f"/jobs/{job}/versions", json=body)
    assert r.status_code == 201, r.text
    submit = _operate(stack, job, "submit", {"version": r.json()["number"]})
    assert submit["state"] == "succeeded", submit
    run_id = submit["run_id"]
    wait_until(lambda: enrich_rows(out), bool, 180)  # records went through the whole chain

    # A backlog that takes enrich several batches (40 records each) to work off: without
    # the chain, totals' AvailableNow run would end before enrich has written it all.
    produce(str(root), "clicks", 2, rate=0, count=400, start_ts_ms=T0 + 80_000, ts_step_ms=20)
    with producing(stream, T0 + 90_000):
        r = stack.client.post(f"/jobs/{job}/drain", json={"timeout_seconds": 300})
        assert r.status_code == 202, r.text
        drain = stack.wait_operation(r.json()["id"], 360)
    assert drain["state"] == "succeeded", drain
    run = stack.run(run_id)
    assert run["state"] == "drained"
    ends = run["drain"]["end_offsets"]
    assert set(ends) == {"clicks", "enriched"} and "logOffset" in ends["enriched"], ends
    end = {int(p): o for p, o in ends["clicks"].items()}
    assert all(end[p] < stream.latest_offsets()[p] for p in end)  # input kept coming
    want = sorted(
        (r.partition, r.offset, r.amount)
        for r in expected_enrich(root, "clicks", {p: (0, o) for p, o in end.items()})
    )
    assert enrich_rows(middle) == want  # enrich: exactly up to its end offsets
    assert enrich_rows(out) == want  # totals: everything enrich wrote, nothing left behind


@under_chaos(
    "tests/worker/test_drain_kill.py::test_stateless_update_survives_a_killed_worker (an "
    "update with strategy stateless on the event log: the old run stopped at a batch boundary, "
    "the new version from its committed offsets, every record once; a worker killed on the "
    "way) and tests/pipelines/test_kafka_sink.py (a stateless update on Kafka, input arriving)"
)
def test_a_stateless_update_continues_exactly_where_the_old_version_stopped(
    runner: Stack, cluster_python: str, team_pipelines: Path, tmp_path: Path
) -> None:
    """A stateless version replaced by another with ``strategy: stateless``: stopped at a
    batch boundary, the next one starts on a fresh checkpoint at its committed offsets."""
    stack, job = runner, "stateless-update"
    root, out1, out2 = tmp_path / "log", tmp_path / "out1", tmp_path / "out2"
    stream = EventLog(root).create_stream("clicks", 2)
    produce(str(root), "clicks", 2, rate=0, count=200, start_ts_ms=T0, ts_step_ms=400)
    _job(stack, job)
    on_runner = Target("runner", cluster_python, team_pipelines)
    v1 = _enrich_version(stack, on_runner, job, root, out1)
    v2 = _enrich_version(stack, on_runner, job, root, out2)
    submit = _operate(stack, job, "submit", {"version": v1})
    assert submit["state"] == "succeeded", submit
    wait_until(lambda: _json_rows(out1), bool, 180)
    with producing(stream, T0 + 90_000):
        update = _operate(
            stack, job, "update", {"version": v2, "strategy": "stateless", "verify_seconds": 3}
        )
    assert update["state"] == "succeeded", update
    assert stack.run(submit["run_id"])["state"] == "stopped"
    latest = stream.latest_offsets()
    want = sorted(
        (r.partition, r.offset, r.amount)
        for r in expected_enrich(root, "clicks", {p: (0, o) for p, o in latest.items()})
    )
    wait_until(
        lambda: sorted(enrich_rows(out1) + enrich_rows(out2)), lambda rows: rows == want, 180
    )
    assert _operate(stack, job, "stop")["state"] == "succeeded"
