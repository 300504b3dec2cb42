"""The large-state example (pipelines/dedup_events.py: each event id once over an hour of
event time, on RocksDB with changelog checkpointing) on real Spark and both backends, through
an update by snapshot and then a drain while events (one in seven retried) keep arriving: its
output is each event id of the log exactly once, as the ground truth computed from the raw log
says. (At toy size here; bench/ is where the state grows.)"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pipelines.dedup_events import events_with_retries, produce_events
from pipelines.ground_truth import DRAIN_MARKER_MS, expected_deduplicated
from pipelines.register_examples import ROCKSDB_CONF
from tests.operations.test_lifecycle_e2e import _operate
from tests.support.backends import Target
from tests.support.chaos.harness import committed_files
from tests.support.stack import Stack, wait_until
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.sources.eventlog import EventLog, NewRecord
from tidegate_runtime.sources.eventlog_source import MARKER_PARTITION

pytestmark = pytest.mark.e2e

T0 = 1_767_225_600_000
STREAM = "events"


def _version(stack: Stack, target: Target, job: str, root: Path, out: Path) -> int:
    body = {
        "app": {
            "file": target.pipeline("dedup_events.py"),
            "args": ["--root", str(root), "--stream", STREAM, "--output", str(out)],
        },
        "cluster": target.cluster,
        "conf": target.conf(**ROCKSDB_CONF),
        "queries": [
            {
                "name": "dedup_events",
                "sources": [
                    {
                        "name": "events",
                        "kind": "eventlog",
                        "options": {"root": str(root), "stream": STREAM},
                    }
                ],
                "stateful_operators": [{"kind": "dedup_within_watermark"}],
                "output_mode": "append",
                "trigger": "1 SECONDS",
            }
        ],
    }
    r = stack.client.post(f"/jobs/{job}/versions", json=body)
    assert r.status_code == 201, r.text
    return int(r.json()["number"])


def _output(out: Path) -> list[tuple[Any, ...]]:
    rows = []
    for path in committed_files(out):
        for r in pq.read_table(path).to_pylist():
            rows.append((r["event_id"], int(r["timestamp"].timestamp() * 1000), r["value"]))
    return sorted(rows)


def _expected(root: Path) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in expected_deduplicated(root, STREAM)]


@contextmanager
def _arriving(root: Path, first_id: int, first_ts: int) -> Iterator[None]:
    """Events keep arriving (20 every 0.1 s, retries included) for the block."""
    stream, stop = EventLog(root).stream(STREAM), threading.Event()

    def append() -> None:
        n = first_id
        while not stop.wait(0.1) and n < first_id + 20_000:
            batch: dict[int, list[NewRecord]] = {0: [], 1: []}
            for partition, record in events_with_retries(20, first_ts + (n - first_id) * 10, 10, n):
                batch[partition].append(record)
            for partition, records in batch.items():
                stream.append(partition, records)
            n += 20

    thread = threading.Thread(target=append, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def test_the_large_state_example_through_an_update_by_snapshot_and_a_drain(
    clusters: Stack, target: Target, tmp_path: Path
) -> None:
    stack, job = clusters, f"dedup-{target.cluster}"
    root, out = tmp_path / "log", tmp_path / "out"
    produce_events(str(root), STREAM, 2_000, T0)
    r = stack.client.post("/jobs", json={"name": job})
    assert r.status_code == 201, r.text
    v1 = _version(stack, target, job, root, out)
    v2 = _version(stack, target, job, root, out)  # the same sink: it continues the output
    submit = _operate(stack, job, "submit", {"version": v1})
    assert submit["state"] == "succeeded", submit
    run1 = submit["run_id"]
    wait_until(lambda: _output(out), lambda rows: rows == _expected(root), 180)
    assert len(_expected(root)) == 2_000  # the retries are in the log, not in the output

    with _arriving(root, 100_000, T0 + 60_000):
        updated = _operate(stack, job, "update", {"version": v2, "verify_seconds": 5})
    assert updated["state"] == "succeeded", updated
    assert updated["result"]["previous_run_id"] == run1
    assert stack.run(run1)["state"] == "stopped"
    # Events the old run read, sent again (a producer's late retries: the same records),
    # are dropped by the new run: their ids came over in the state. Then new events.
    produce_events(str(root), STREAM, 500, T0)
    produce_events(str(root), STREAM, 500, T0 + 900_000, first_id=200_000)
    wait_until(lambda: _output(out), lambda rows: rows == _expected(root), 180)

    # A drain of a deduplication sends no marker: caught up to its end offsets, the query
    # stops at a batch boundary with its watermark where the events left it, rather than
    # moved past them to evict every id first (minutes at gigabytes: bench/RESULTS.md).
    with _arriving(root, 300_000, T0 + 1_000_000):
        drained = _operate(stack, job, "drain", {"timeout_seconds": 240})
    assert drained["state"] == "succeeded", drained
    run2 = updated["result"]["run_id"]
    assert stack.run(run2)["state"] == "drained"
    end = {int(p): o for p, o in drained["result"]["end_offsets"][STREAM].items()}
    upto_end = expected_deduplicated(root, STREAM, {p: (0, o) for p, o in end.items()})
    assert _output(out) == [tuple(row) for row in upto_end]
    assert len(upto_end) < len(_expected(root))  # events came after the end: not written
    checkpoint = stack.checkpoint_root / job / str(run2) / "dedup_events"
    last = cp.latest_commit_batch(checkpoint)
    assert last is not None and last == cp.latest_offsets_batch(checkpoint)
    metadata, offsets = cp.read_offsets(checkpoint, last)
    assert all(str(MARKER_PARTITION) not in json.loads(o) for o in offsets if o), offsets
    assert 0 < int(metadata["batchWatermarkMs"]) < DRAIN_MARKER_MS
