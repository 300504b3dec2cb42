"""Which checkpoint files a snapshot takes: exactly what restarts the query at its latest
committed batch, and nothing a running batch is writing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.snapshots.checkpoint_files import describe, select_files
from app.snapshots.errors import ExportError
from tests.support.checkpoints import FakeCheckpoint
from tidegate_runtime.checkpoints.checkpoint import latest_commit_batch


def _state(files: tuple[str, ...], partition: int = 0) -> list[str]:
    prefix = f"state/0/{partition}/"
    return sorted(f[len(prefix) :] for f in files if f.startswith(prefix) and "_metadata" not in f)


def test_committed_prefix_only(tmp_path: Path) -> None:
    ck = FakeCheckpoint(tmp_path / "ck")
    for _ in range(3):
        ck.batch()
    ck.batch(commit=False)  # batch 3 is running: offsets/3 and state version 4 exist
    assert latest_commit_batch(ck.root, planned=True) == 2
    selection = select_files(ck.root, 2)
    files = selection.files
    assert {"metadata", ".metadata.crc", "offsets/1", "offsets/2", "commits/1", "commits/2"} <= set(
        files
    )
    assert "offsets/3" not in files and "offsets/0" not in files
    # State version 3 loads from deltas 1..3; version 4 (the running batch) is left out.
    assert _state(files) == [
        ".1.delta.crc",
        ".2.delta.crc",
        ".3.delta.crc",
        "1.delta",
        "2.delta",
        "3.delta",
    ]
    assert "state/0/_metadata/metadata" in files and "state/0/0/_metadata/schema" in files
    assert "state/0/0/_metadata/.schema.crc" in files


def test_latest_snapshot_file_and_later_deltas(tmp_path: Path) -> None:
    ck = FakeCheckpoint(tmp_path / "ck")
    for n in range(6):
        ck.batch(snapshot=(n == 2))  # 3.snapshot written by maintenance
    ck.batch(snapshot=True, commit=False)  # 7.snapshot beyond the committed batch 5
    got = [f for f in _state(select_files(ck.root, 5).files) if not f.startswith(".")]
    assert got == ["3.snapshot", "4.delta", "5.delta", "6.delta"]


def test_rocksdb_zip_and_changelog_layout(tmp_path: Path) -> None:
    root = tmp_path / "ck"
    ck = FakeCheckpoint(root, operator=None)
    for _ in range(5):
        ck.batch()
    part = root / "state" / "0" / "0"
    (part / "SSTs").mkdir(parents=True)
    for name in ("2_ab12.zip", "3.changelog", "4.changelog", "5.changelog", "6.changelog"):
        (part / name).write_bytes(b"x")
    (part / "SSTs" / "000012-a1.sst").write_bytes(b"sst")
    files = select_files(root, 4).files
    state = sorted(f for f in files if f.startswith("state/"))
    assert state == [
        "state/0/0/2_ab12.zip",
        "state/0/0/3.changelog",
        "state/0/0/4.changelog",
        "state/0/0/5.changelog",
        "state/0/0/SSTs/000012-a1.sst",
    ]


def test_file_source_log_up_to_the_batch(tmp_path: Path) -> None:
    ck = FakeCheckpoint(tmp_path / "ck", operator=None)
    ck.offsets_line = lambda n: json.dumps({"logOffset": n})  # type: ignore[method-assign]
    for _ in range(3):
        ck.batch()
    log = ck.root / "sources" / "0"
    log.mkdir(parents=True)
    for n in range(4):
        (log / str(n)).write_text("v1")
    files = select_files(ck.root, 1).files
    assert [f for f in files if f.startswith("sources/")] == ["sources/0/0", "sources/0/1"]


def test_uncommitted_batch_is_refused(tmp_path: Path) -> None:
    ck = FakeCheckpoint(tmp_path / "ck")
    ck.batch(commit=False)
    assert latest_commit_batch(ck.root, planned=True) is None
    with pytest.raises(ExportError, match="not committed"):
        select_files(ck.root, 0)


def test_describe_reads_offsets_watermark_operators(tmp_path: Path) -> None:
    ck = FakeCheckpoint(tmp_path / "ck", sources=2)
    ck.batch()
    ck.batch()
    spec = {
        "name": "q",
        "sources": [{"name": "clicks"}, {"name": "views"}],
        "stateful_operators": [{"kind": "tumbling_window"}],
    }
    info = describe(ck.root, 1, spec)
    assert info["batch_id"] == 1 and info["watermark_ms"] == 1000
    assert info["sources"] == [
        {"name": "clicks", "offset": {"0": 20, "1": 10}},
        {"name": "views", "offset": {"0": 20, "1": 10}},
    ]
    (op,) = info["operators"]
    assert (op["name"], op["partitions"], op["stores"]) == ("stateStoreSave", 2, ["default"])
    assert [f["name"] for f in op["value_schema"]["fields"]] == ["count", "sum"]
    assert info["conf"]["spark.sql.shuffle.partitions"] == "2"
    assert info["declared"]["stateful_operators"] == [{"kind": "tumbling_window"}]
