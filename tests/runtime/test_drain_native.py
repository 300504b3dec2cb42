"""Which queries a drain drains natively (tidegate_runtime/driver/directives.py::Drainer._native):
only those whose event-log readers were given their control file, since a reader without it never
sees the drain's cap or marker (the drain would wait for them until its timeout). And which of them
the drain's marker must flush (``_needs_flush``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest

from tests.support.checkpoints import FakeCheckpoint
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.driver import directives
from tidegate_runtime.driver.runtime import Runtime

DECLARED = {
    "counts": {"sources": [{"name": "clicks", "kind": "eventlog"}]},
    "joined": {
        "sources": [{"name": "clicks", "kind": "eventlog"}, {"name": "views", "kind": "eventlog"}]
    },
    "files": {"sources": [{"name": "landing", "kind": "file"}]},
}


def _runtime() -> Runtime:
    return Runtime(
        spark=cast(Any, None),
        client=cast(Any, object()),  # managed
        checkpoint_dir="/checkpoints/job/7",
        declared=DECLARED,
    )


def test_a_query_drains_natively_once_its_readers_have_their_control_files() -> None:
    runtime = _runtime()
    assert not any(runtime._native(q) for q in DECLARED)  # no reader told: bounded
    assert runtime._uncapped("joined") == ["clicks", "views"]  # what Runtime.start warns of
    options = runtime.reader_options("counts")
    assert options["controlFile"] == "/checkpoints/job/7/_control/clicks.json"
    assert runtime._native("counts")
    assert not runtime._native("joined")  # views' reader has no control file yet
    assert runtime._uncapped("joined") == ["views"]
    assert runtime.control_file("views") == "/checkpoints/job/7/_control/views.json"
    assert runtime._native("joined")
    assert not runtime._native("files")  # not an event log: always bounded


class _Progressed:
    """A running query as far as _needs_flush reads it: its last progress."""

    def __init__(self, progress: dict[str, Any] | None) -> None:
        self.lastProgress = progress


def _flushing(
    tmp_path: Path,
    operator: str | None,
    *,
    stateful: bool = True,
    progress: dict[str, Any] | None = None,
) -> bool:
    """Whether a drain sends its marker to the query ``q``: a checkpoint whose one state
    operator Spark named ``operator`` (None: no state written yet), its last ``progress``."""
    if operator is not None:
        FakeCheckpoint(tmp_path / "q", operator=operator)
    runtime = Runtime(
        spark=cast(Any, None),
        client=cast(Any, object()),
        checkpoint_dir=str(tmp_path),
        declared={"q": {"sources": [], "stateful": stateful}},
    )
    runtime.queries["q"] = cast(Any, _Progressed(progress))
    return runtime._needs_flush("q")


def test_a_drain_flushes_windows_but_not_a_deduplication(tmp_path: Path) -> None:
    # Evicting a deduplication's ids emits nothing: no marker, its state is kept as it is.
    assert not _flushing(tmp_path / "a", "dedupeWithinWatermark")
    assert not _flushing(tmp_path / "b", "dedupe")
    # Windows, sessions and joins emit their last rows in the batch after the marker.
    assert _flushing(tmp_path / "c", "stateStoreSave")
    assert _flushing(tmp_path / "d", "symmetricHashJoin")
    assert _flushing(tmp_path / "e", "sessionWindowStateStoreSaveExec")


def test_an_aggregate_without_a_watermark_is_not_flushed(tmp_path: Path) -> None:
    # pipelines/key_totals.py: a running total per key in update mode. Spark reports a
    # watermark only for a plan that has one; without it no state closes by event time, and
    # no no-data batch would ever follow a marker (the drain would wait for one until its
    # timeout).
    ran = {"stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 3}]}
    totals = {"batchId": 4, "eventTime": {"max": "2026-01-01T00:00:00.000Z"}, **ran}
    assert not _flushing(tmp_path / "a", "stateStoreSave", progress=totals)
    assert not _flushing(tmp_path / "b", "stateStoreSave", progress={"batchId": 4, **ran})
    windows = {"batchId": 4, "eventTime": {"watermark": "2026-01-01T00:00:00.000Z"}, **ran}
    assert _flushing(tmp_path / "c", "stateStoreSave", progress=windows)
    # No batch yet: the checkpoint's operators decide, as before.
    assert _flushing(tmp_path / "d", "stateStoreSave", progress=None)
    # Restarted on a quiet stream: Spark reports a trigger that ran no batch with no state
    # operators and no event time, whatever the plan holds; not a reason to skip the flush.
    idle = {"batchId": 4, "eventTime": {}, "stateOperators": []}
    assert _flushing(tmp_path / "e", "stateStoreSave", progress=idle)


def test_before_any_state_is_written_the_declaration_decides(tmp_path: Path) -> None:
    assert _flushing(tmp_path / "a", None, stateful=True)
    assert not _flushing(tmp_path / "b", None, stateful=False)


def test_an_operator_spark_did_not_name_is_flushed(tmp_path: Path) -> None:
    # A checkpoint of an older Spark: partition folders, no operator metadata.
    (tmp_path / "q" / "state" / "0" / "0").mkdir(parents=True)
    assert _flushing(tmp_path, None, stateful=False)


# ---- when a stage with nothing to flush stops --------------------------------------------


class _Query:
    """A query as _drain_native sees it (stop_at_batch_boundary is replaced below)."""

    isActive = True
    lastProgress = None


class _Writer:
    def __init__(self) -> None:
        self.starts = 0

    def start(self) -> _Query:
        self.starts += 1
        return _Query()


def _batch(checkpoint: Path, n: int, offset: int, *, commit: bool) -> None:
    for folder, lines in (
        ("offsets", ["v1", '{"batchWatermarkMs":0}', json.dumps({"0": offset})]),
        ("commits", ["v1", "{}"]),
    ):
        if folder == "commits" and not commit:
            continue
        path = checkpoint / folder / str(n)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines))


def _dedupe_drain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, commits_at_stop: bool
) -> tuple[Runtime, list[str], _Writer]:
    """A runtime draining one deduplication (nothing to flush) to end offset 10, its batch 3
    planned up to 10 and not committed; the batch commits during the stop or does not."""
    FakeCheckpoint(tmp_path / "q", operator="dedupeWithinWatermark")
    checkpoint = tmp_path / "q"
    _batch(checkpoint, 2, 6, commit=True)
    _batch(checkpoint, 3, 10, commit=False)
    runtime = Runtime(
        spark=cast(Any, None),
        client=cast(Any, object()),
        checkpoint_dir=str(tmp_path),
        declared={"q": {"sources": [{"name": "clicks", "kind": "eventlog"}], "stateful": True}},
    )
    runtime.queries = {"q": cast(Any, _Query())}
    writer = _Writer()
    runtime._writers = {"q": cast(Any, writer)}
    runtime._drain_state.end = {"clicks": {"0": 10}}
    stops: list[str] = []

    def stop(query: Any, timeout: float = 120.0, checkpoint: str | None = None) -> None:
        stops.append(str(checkpoint))
        if commits_at_stop:  # told to end after the batch under way, which commits
            _batch(Path(str(checkpoint)), 3, 10, commit=True)

    monkeypatch.setattr(directives, "stop_at_batch_boundary", stop)
    return runtime, stops, writer


def test_a_stage_with_nothing_to_flush_stops_after_the_batch_that_reads_to_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The batch reading up to the end offsets is planned, not committed: the stop is asked
    # now (it ends the query after that batch), not once it committed, a batch later.
    runtime, stops, writer = _dedupe_drain(tmp_path, monkeypatch, commits_at_stop=True)
    assert runtime._drain_native(["q"], [("q", 0, "clicks")])
    assert stops == [str(tmp_path / "q")] and writer.starts == 0
    assert not runtime._drain_state.marker


def test_a_stop_that_ended_short_of_the_end_runs_the_query_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stopped before that batch committed (interrupted past the stop's timeout): the query
    # starts again on its checkpoint, which re-runs the batch, and the drain goes on.
    runtime, stops, writer = _dedupe_drain(tmp_path, monkeypatch, commits_at_stop=False)
    assert not runtime._drain_native(["q"], [("q", 0, "clicks")])
    assert len(stops) == 1 and writer.starts == 1


def test_a_stage_to_flush_waits_for_the_commit_before_its_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime, stops, _ = _dedupe_drain(tmp_path, monkeypatch, commits_at_stop=True)
    runtime.declared["q"]["stateful"] = True
    monkeypatch.setattr(runtime, "_needs_flush", lambda name: True)  # a window, say
    monkeypatch.setattr(runtime, "_write_controls", lambda *a, **k: None)
    assert not runtime._drain_native(["q"], [("q", 0, "clicks")])  # planned only: wait
    assert not runtime._drain_state.marker and stops == []
    _batch(tmp_path / "q", 3, 10, commit=True)
    assert not runtime._drain_native(["q"], [("q", 0, "clicks")])  # committed: the marker
    assert runtime._drain_state.marker and stops == []


# ---- a bounded drain (Kafka, files): AvailableNow, then the flush batch --------------------


class _Ended:
    """A query that has ended cleanly (AvailableNow or Once ran out)."""

    isActive = False
    lastProgress = None

    def exception(self) -> None:
        return None


class _TriggeredWriter:
    def __init__(self) -> None:
        self.triggers: list[str] = []

    def trigger(self, **how: Any) -> _TriggeredWriter:
        self.triggers.append(next(iter(how)))
        return self

    def start(self) -> _Ended:
        return _Ended()


class _Channel:
    def __init__(self) -> None:
        self.reports: list[dict[str, Any]] = []

    def drain_state(self, report: dict[str, Any]) -> None:
        self.reports.append(report)


def _kafka_batch(checkpoint: Path, n: int, *, watermark: int = 0, commit: bool = True) -> None:
    meta = json.dumps({"batchWatermarkMs": watermark, "batchTimestampMs": 1, "conf": {}})
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "commits").mkdir(exist_ok=True)
    (checkpoint / "offsets" / str(n)).write_text(f'v1\n{meta}\n{{"t":{{"0":4,"1":6}}}}')
    if commit:
        (checkpoint / "commits" / str(n)).write_text("v1\n{}")


def test_a_bounded_drain_flushes_its_windows_with_a_batch_that_reads_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = tmp_path / "q"
    _kafka_batch(checkpoint, 5)
    channel, writer = _Channel(), _TriggeredWriter()
    runtime = Runtime(
        spark=cast(Any, None),
        client=cast(Any, channel),
        checkpoint_dir=str(tmp_path),
        declared={"q": {"sources": [{"name": "clicks", "kind": "kafka"}], "stateful": True}},
    )
    runtime.sources = {"clicks": {"kind": "kafka", "options": {"subscribe": "t"}}}
    runtime.queries, runtime._writers = {"q": cast(Any, _Ended())}, {"q": cast(Any, writer)}
    runtime._drain_state.end = {}
    monkeypatch.setattr(directives, "stop_at_batch_boundary", lambda *a, **k: None)
    monkeypatch.setattr(runtime, "_needs_flush", lambda name: True)  # windows, say

    assert not runtime._drain_bounded("q")  # 1. stopped, run again with AvailableNow
    assert writer.triggers == ["availableNow"]
    assert not runtime._drain_bounded("q")  # 2. it ended: the flush batch, alone
    assert writer.triggers == ["availableNow", "once"] and cp.uncommitted_batches(checkpoint) == [6]
    metadata, lines = cp.read_offsets(checkpoint, 6)
    assert metadata["batchWatermarkMs"] == cp.FLUSH_WATERMARK_MS
    assert lines == cp.read_offsets(checkpoint, 5)[1]
    (checkpoint / "commits" / "6").write_text("v1\n{}")
    assert runtime._drain_bounded("q")  # 3. flushed: its end, by partition
    assert channel.reports == [{"end_offsets": {"clicks": {"0": 4, "1": 6}}, "drained": False}]

    # A query started again on the flushed checkpoint (its driver restarted mid-drain): one
    # batch that reads nothing, never one that reads records it would drop as late.
    runtime._launch("q", str(checkpoint))
    assert writer.triggers[-1] == "once" and cp.uncommitted_batches(checkpoint) == [7]
    assert cp.read_offsets(checkpoint, 7)[1] == lines


def test_a_checkpoint_without_a_flush_starts_as_declared(tmp_path: Path) -> None:
    checkpoint = tmp_path / "q"
    _kafka_batch(checkpoint, 5)
    writer = _TriggeredWriter()
    runtime = _runtime()
    runtime._writers = {"q": cast(Any, writer)}
    runtime._launch("q", str(checkpoint))
    runtime._launch("q", str(tmp_path / "none"))  # not there yet: Spark makes it
    assert writer.triggers == [] and cp.uncommitted_batches(checkpoint) == []
