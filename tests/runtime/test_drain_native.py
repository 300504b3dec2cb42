"""Which queries a drain drains natively (tidegate_runtime/drain.py::Drainer._native): only
those whose event-log readers were given their control file, since a reader without it never
sees the drain's cap or marker (the drain would wait for them until its timeout). And which of
them the drain's marker must flush (``_needs_flush``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from tests.support.checkpoints import FakeCheckpoint
from tidegate_runtime.control import Runtime

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


def _flushing(tmp_path: Path, operator: str | None, *, stateful: bool = True) -> bool:
    """Whether a drain sends its marker to the query ``q``: a checkpoint whose one state
    operator Spark named ``operator`` (None: no state written yet)."""
    if operator is not None:
        FakeCheckpoint(tmp_path / "q", operator=operator)
    runtime = Runtime(
        spark=cast(Any, None),
        client=cast(Any, object()),
        checkpoint_dir=str(tmp_path),
        declared={"q": {"sources": [], "stateful": stateful}},
    )
    return runtime._needs_flush("q")


def test_a_drain_flushes_windows_but_not_a_deduplication(tmp_path: Path) -> None:
    # Evicting a deduplication's ids emits nothing: no marker, its state is kept as it is.
    assert not _flushing(tmp_path / "a", "dedupeWithinWatermark")
    assert not _flushing(tmp_path / "b", "dedupe")
    # Windows, sessions and joins emit their last rows in the batch after the marker.
    assert _flushing(tmp_path / "c", "stateStoreSave")
    assert _flushing(tmp_path / "d", "symmetricHashJoin")
    assert _flushing(tmp_path / "e", "sessionWindowStateStoreSaveExec")


def test_before_any_state_is_written_the_declaration_decides(tmp_path: Path) -> None:
    assert _flushing(tmp_path / "a", None, stateful=True)
    assert not _flushing(tmp_path / "b", None, stateful=False)


def test_an_operator_spark_did_not_name_is_flushed(tmp_path: Path) -> None:
    # A checkpoint of an older Spark: partition folders, no operator metadata.
    (tmp_path / "q" / "state" / "0" / "0").mkdir(parents=True)
    assert _flushing(tmp_path, None, stateful=False)
