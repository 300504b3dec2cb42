"""Which queries a drain drains natively (tidegate_runtime/drain.py::Drainer._native): only
those whose event-log readers were given their control file, since a reader without it never
sees the drain's cap or marker (the drain would wait for them until its timeout)."""

from __future__ import annotations

from typing import Any, cast

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
