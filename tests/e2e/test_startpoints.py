"""Startpoints on real Spark: set through the API, applied by the runtime at start (as
starting offsets on a fresh query, by rewriting the committed offsets afterwards), window
state kept, nothing applied twice."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from app.runtime.eventlog import EventLog
from app.runtime.produce import produce
from pipelines.ground_truth import log_records
from tests.e2e.stack import Stack, wait_until
from tests.e2e.test_tidegate import _job, _operate, _output, _windowed_version, clusters  # noqa: F401

pytestmark = pytest.mark.e2e

T0 = 1_767_225_600_000
WINDOW_MS, DELAY_MS = 60_000, 10_000


def _expected(root: Path, ranges: list[dict[int, tuple[int, int]]]) -> list[tuple[Any, ...]]:
    """Windowed counts over exactly the records of ``ranges`` (a union of offset ranges),
    closed by the watermark the query reached: what a run that kept its state emits."""
    groups: dict[tuple[int, str], list[float]] = defaultdict(lambda: [0, 0.0])
    max_ts = 0
    for part in ranges:
        for _, record in log_records(root, "clicks", part):
            max_ts = max(max_ts, record.timestamp_ms)
            g = groups[(record.timestamp_ms - record.timestamp_ms % WINDOW_MS, record.key)]
            g[0] += 1
            g[1] += float(record.value)
    return sorted(
        (start, key, int(c), s)
        for (start, key), (c, s) in groups.items()
        if start + WINDOW_MS <= max_ts - DELAY_MS
    )


def test_startpoints_fast_forward_and_fan_out_keep_state(clusters: Stack, tmp_path: Path) -> None:  # noqa: F811
    stack, job = clusters, "startpoints-windowed"
    root, out = tmp_path / "log", tmp_path / "out"
    stream = EventLog(root).create_stream("clicks", 2)
    produce(str(root), "clicks", 2, rate=0, count=400, start_ts_ms=T0, ts_step_ms=400)
    first_end = stream.latest_offsets()
    _job(stack, job)
    version = _windowed_version(stack, job, "runner", root, out)
    sp_url = f"/jobs/{job}/startpoints"

    # Before the first run: every partition skips its first 20 records, but partition 1
    # (a partition-level startpoint beats the source-level one) reads from the oldest.
    r = stack.client.put(
        sp_url,
        json={
            "startpoints": [
                {"source": "clicks", "type": "OFFSET", "value": 20},
                {"source": "clicks", "partition": 1, "type": "OLDEST"},
            ]
        },
    )
    assert r.status_code == 200, r.text
    submit = _operate(stack, job, "submit", {"version": version})
    assert submit["state"] == "succeeded", submit
    run_id = submit["run_id"]
    wanted = {str(p): o for p, o in first_end.items()}
    wait_until(
        lambda: stack.run(run_id)["progress"].get("windowed_counts", {}),
        lambda p: (p.get("sources") or [{}])[0].get("end_offset") == wanted,
        180,
    )
    view = wait_until(lambda: stack.client.get(sp_url).json(), lambda v: v["pending"] == [], 60)
    fresh = view["applied"][0]
    assert fresh["batch_id"] is None and fresh["after_offsets"] == {"0": 20, "1": 0}
    assert fresh["committed_at"] is not None
    assert _operate(stack, job, "stop")["state"] == "succeeded"

    # More data; fast-forward every partition to a timestamp inside it (skip what is before).
    produce(str(root), "clicks", 2, rate=0, count=200, start_ts_ms=T0 + 160_000, ts_step_ms=400)
    skip_to = T0 + 200_000
    r = stack.client.put(
        sp_url,
        json={
            "startpoints": [
                {"source": "clicks", "type": "TIMESTAMP", "value": "2026-01-01T00:03:20Z"},
            ]
        },
    )
    assert r.status_code == 200, r.text
    targets = {p: stream.resolve_timestamp(p, skip_to) for p in range(2)}
    preview = stack.client.post(f"{sp_url}/preview").json()
    assert {
        (row["partition"], row["move"], row["target"], row["records"]) for row in preview["rows"]
    } == {(p, "skip", targets[p], targets[p] - first_end[p]) for p in range(2)}
    restart = _operate(stack, job, "restart")
    assert restart["state"] == "succeeded", restart
    end = {str(p): o for p, o in stream.latest_offsets().items()}
    wait_until(
        lambda: stack.run(run_id)["progress"].get("windowed_counts", {}),
        lambda p: (p.get("sources") or [{}])[0].get("end_offset") == end,
        180,
    )
    expected = _expected(
        root,
        [
            {0: (20, first_end[0]), 1: (0, first_end[1])},
            {p: (targets[p], stream.latest_offsets()[p]) for p in range(2)},
        ],
    )
    # The window open at the first stop kept its count across the restart (state kept).
    wait_until(lambda: _output(out), lambda rows: rows == expected, 120)
    view = wait_until(lambda: stack.client.get(sp_url).json(), lambda v: v["pending"] == [], 60)
    rewrite = view["applied"][0]
    assert rewrite["batch_id"] is not None
    assert rewrite["before_offsets"] == wanted
    assert rewrite["after_offsets"] == {str(p): targets[p] for p in range(2)}
    assert len(view["applied"]) == 2  # each applied once
    assert _operate(stack, job, "stop")["state"] == "succeeded"
