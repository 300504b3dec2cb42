"""Startpoints on real Spark: set through the API, applied by the runtime at start (as
starting offsets on a fresh query, by rewriting the committed offsets afterwards), window
state kept, nothing applied twice. One job goes through every case, to keep it cheap; the
scenario runs on both backends (tests/support/backends.py)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from pipelines.ground_truth import log_records
from tests.operations.test_lifecycle_e2e import _job, _operate, _output, _windowed_version
from tests.support.backends import Target
from tests.support.stack import Stack, wait_until
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_producer import produce

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


def _from_time(stream: Any, ts_ms: int, end: dict[int, int]) -> dict[int, tuple[int, int]]:
    """Offset ranges of the records at or after ``ts_ms`` (event times grow within a
    partition here), up to ``end``."""
    return {p: (stream.resolve_timestamp(p, ts_ms), o) for p, o in end.items()}


def _end_offset(stack: Stack, run_id: int) -> Any:
    return (
        (stack.run(run_id)["progress"].get("windowed_counts", {}).get("sources") or [{}])[0]
    ).get("end_offset")


def test_startpoints_end_to_end_keep_state(clusters: Stack, target: Target, tmp_path: Path) -> None:
    stack, job = clusters, f"startpoints-windowed-{target.cluster}"
    root, out = tmp_path / "log", tmp_path / "out"
    stream = EventLog(root).create_stream("clicks", 3)
    produce(str(root), "clicks", 3, rate=0, count=400, start_ts_ms=T0, ts_step_ms=400)
    first_end = stream.latest_offsets()
    _job(stack, job)
    version = _windowed_version(stack, job, target, root, out)
    sp_url = f"/jobs/{job}/startpoints"

    # 1. A fresh query: every partition skips its first 20 records, but partition 1 (a
    # partition-level startpoint beats the source-level one) reads from the oldest.
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
    wait_until(lambda: _end_offset(stack, run_id), lambda end: end == wanted, 180)
    view = wait_until(lambda: stack.client.get(sp_url).json(), lambda v: v["pending"] == [], 60)
    fresh = view["applied"][0]
    assert fresh["batch_id"] is None and fresh["after_offsets"] == {"0": 20, "1": 0, "2": 20}
    assert fresh["committed_at"] is not None
    assert _operate(stack, job, "stop")["state"] == "succeeded"

    # 2. Fast-forwards rewriting the checkpoint: every partition to a timestamp inside the
    # new data (skip what is before), partition 1 to an offset a little further, partition 2
    # to what arrives after the start (UPCOMING).
    produce(str(root), "clicks", 3, rate=0, count=200, start_ts_ms=T0 + 160_000, ts_step_ms=400)
    skip_to = T0 + 200_000
    targets = {p: stream.resolve_timestamp(p, skip_to) for p in range(3)}
    targets[1] += 7
    targets[2] = stream.latest_offsets()[2]
    r = stack.client.put(
        sp_url,
        json={
            "startpoints": [
                {"source": "clicks", "type": "TIMESTAMP", "value": "2026-01-01T00:03:20Z"},
                {"source": "clicks", "partition": 1, "type": "OFFSET", "value": targets[1]},
                {"source": "clicks", "partition": 2, "type": "UPCOMING"},
            ]
        },
    )
    assert r.status_code == 200, r.text
    preview = stack.client.post(f"{sp_url}/preview").json()
    assert {
        (row["partition"], row["move"], row["target"], row["records"]) for row in preview["rows"]
    } == {(p, "skip", targets[p], targets[p] - first_end[p]) for p in range(3)}
    assert _operate(stack, job, "restart")["state"] == "succeeded"
    view = wait_until(
        lambda: stack.client.get(sp_url).json(), lambda v: len(v["applied"]) == 2, 120
    )
    # Records that arrive after the start are read on every partition, partition 2 too.
    produce(str(root), "clicks", 3, rate=0, count=100, start_ts_ms=T0 + 240_000, ts_step_ms=400)
    end_a = stream.latest_offsets()
    wait_until(
        lambda: _end_offset(stack, run_id), lambda end: end == {str(p): o for p, o in end_a.items()}
    )
    read_1 = {0: (20, first_end[0]), 1: (0, first_end[1]), 2: (20, first_end[2])}
    read_a = {p: (targets[p], end_a[p]) for p in range(3)}
    # One computation over what was read: the window open at the first stop kept its count.
    before_rewind = _expected(root, [read_1, read_a])
    wait_until(lambda: _output(out), lambda rows: rows == before_rewind, 120)
    view = wait_until(lambda: stack.client.get(sp_url).json(), lambda v: v["pending"] == [], 60)
    rewrite = view["applied"][0]
    assert rewrite["batch_id"] is not None and rewrite["before_offsets"] == wanted
    assert rewrite["after_offsets"] == {str(p): targets[p] for p in range(3)}
    assert len(view["applied"]) == 2  # each applied once
    assert _operate(stack, job, "stop")["state"] == "succeeded"

    # 3. Rewinds on the stateful query (the semantic in tidegate_runtime/sources/positions.py):
    # every partition back to 3:30, partition 1 to its oldest record. The replayed records go into
    # the kept state with the watermark lowered, so none is dropped as late: windows
    # emitted before are emitted again over the replayed records only (3:00 counts just
    # its records from 3:30); the window open at the stop (4:00) keeps its count and adds
    # them (what it had read and is replayed counts twice).
    produce(str(root), "clicks", 3, rate=0, count=100, start_ts_ms=T0 + 280_000, ts_step_ms=400)
    rewind_to = T0 + 210_000
    rewound = {p: stream.resolve_timestamp(p, rewind_to) for p in range(3)}
    rewound[1] = 0
    r = stack.client.put(
        sp_url,
        json={
            "startpoints": [
                {"source": "clicks", "type": "TIMESTAMP", "value": rewind_to},
                {"source": "clicks", "partition": 1, "type": "OLDEST"},
            ]
        },
    )
    assert r.status_code == 200, r.text
    preview = stack.client.post(f"{sp_url}/preview").json()
    assert {(row["partition"], row["move"], row["records"]) for row in preview["rows"]} == {
        (p, "replay", end_a[p] - rewound[p]) for p in range(3)
    }
    # Issue 53: the watermark Spark left in the checkpoint is lowered below the earliest
    # replayed record, so none of them is behind it (event times grow within a partition).
    [late] = preview["late"]
    assert (late["query"], late["lowered"], late["behind"]) == ("windowed_counts", True, 0), late
    assert late["replayed"] == sum(end_a[p] - rewound[p] for p in range(3))
    assert late["start_watermark"] < late["watermark"], late
    assert _operate(stack, job, "restart")["state"] == "succeeded"
    end_b = stream.latest_offsets()
    kept_state = _from_time(stream, T0 + 240_000, end_a)  # window 4:00, open at the stop
    replayed = {p: (rewound[p], end_b[p]) for p in range(3)}
    after_rewind = _expected(root, [kept_state, replayed])
    assert {row[0] for row in after_rewind} == {T0 + i * WINDOW_MS for i in range(5)}
    wait_until(lambda: _output(out), lambda rows: rows == sorted(before_rewind + after_rewind), 180)
    view = wait_until(lambda: stack.client.get(sp_url).json(), lambda v: v["pending"] == [], 60)
    rewind = view["applied"][0]
    assert rewind["before_offsets"] == {str(p): o for p, o in end_a.items()}
    assert rewind["after_offsets"] == {str(p): o for p, o in rewound.items()}
    assert len(view["applied"]) == 3
    assert _operate(stack, job, "stop")["state"] == "succeeded"

    # Batches committed past the rewind: undoing it would need Spark to un-commit them.
    r = stack.client.post(f"{sp_url}/{rewind['id']}/revert")
    assert r.status_code == 409, r.text
    assert "committed batches" in r.json()["detail"] and "OFFSET startpoints" in r.json()["detail"]
