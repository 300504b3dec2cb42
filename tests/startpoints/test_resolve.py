"""Resolving and applying startpoints on real checkpoint files (no Spark needed: the files
are written in Spark's format; tests/startpoints/test_startpoints_e2e.py proves Spark follows
them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.sources import positions as sp
from tidegate_runtime.sources.eventlog import EventLog, NewRecord

T0 = 1_767_225_600_000


@pytest.fixture
def log(tmp_path: Path) -> dict[str, str]:
    stream = EventLog(tmp_path / "log").create_stream("s", 3)
    for p in range(3):
        stream.append(p, [NewRecord(T0 + i * 1000, f"k{i}", str(i)) for i in range(100)])
    return {"root": str(tmp_path / "log"), "stream": "s"}


def write_checkpoint(
    path: Path, batch: int, line: str, *, committed: bool = True, watermark_ms: int = 0
) -> Path:
    (path / "offsets").mkdir(parents=True, exist_ok=True)
    (path / "commits").mkdir(parents=True, exist_ok=True)
    (path / "metadata").write_text('{"id":"q"}')
    meta = json.dumps({"batchWatermarkMs": watermark_ms, "batchTimestampMs": T0, "conf": {}})
    (path / "offsets" / str(batch)).write_text(f"v1\n{meta}\n{line}")
    if committed:
        (path / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return path


def P(id: int, type: str, value: int | None = None, partition: int | None = None) -> sp.Startpoint:
    return sp.Startpoint(id, "src", partition, type, value)


def test_types_and_precedence(log: dict[str, str]) -> None:
    current = {0: 50, 1: 50, 2: 50}
    assert sp.resolve("eventlog", log, [P(1, "OLDEST")], current) == {0: 0, 1: 0, 2: 0}
    assert sp.resolve("eventlog", log, [P(1, "UPCOMING")], current) == {0: 100, 1: 100, 2: 100}
    # a partition-level startpoint beats the source-level one; the rest fan out
    got = sp.resolve(
        "eventlog", log, [P(1, "OFFSET", 10), P(2, "OFFSET", 70, partition=2)], current
    )
    assert got == {0: 10, 1: 10, 2: 70}
    # TIMESTAMP -> first record at or after it
    assert sp.resolve("eventlog", log, [P(1, "TIMESTAMP", T0 + 42_500)], current) == {
        0: 43,
        1: 43,
        2: 43,
    }
    # only one partition set: the others keep their position
    assert sp.resolve("eventlog", log, [P(1, "OLDEST", partition=1)], current) == {
        0: 50,
        1: 0,
        2: 50,
    }
    with pytest.raises(sp.StartpointError, match="partition 7 does not exist"):
        sp.resolve("eventlog", log, [P(1, "OLDEST", partition=7)], current)
    with pytest.raises(sp.StartpointError, match="beyond"):
        sp.resolve("eventlog", log, [P(1, "OFFSET", 101)], current)


def test_rewrite_keeps_original_and_reverts(log: dict[str, str], tmp_path: Path) -> None:
    ck = write_checkpoint(tmp_path / "ck", 4, '{"0": 50, "1": 50, "2": 50}')
    write_checkpoint(ck, 5, '{"0": 60, "1": 60, "2": 60}', committed=False)  # planned only
    app = sp.apply_to_checkpoint(ck, "q", "src", 0, "eventlog", log, [P(9, "OFFSET", 80, 1)])
    assert app.batch_id == 4 and app.before == {"0": 50, "1": 50, "2": 50}
    assert app.after == {"0": 50, "1": 80, "2": 50}
    _, lines = cp.read_offsets(ck, 4)
    assert json.loads(lines[0]) == {"0": 50, "1": 80, "2": 50}
    assert not (ck / "offsets" / "5").exists()  # the uncommitted plan would have ignored it
    assert Path(app.original_file or "").read_text().endswith('{"0": 50, "1": 50, "2": 50}')
    sp.revert(ck, 4)
    assert json.loads(cp.read_offsets(ck, 4)[1][0]) == {"0": 50, "1": 50, "2": 50}


def test_fresh_query_gets_starting_offsets(log: dict[str, str], tmp_path: Path) -> None:
    given: list[dict[int, int]] = []
    app = sp.apply_to_checkpoint(
        tmp_path / "none", "q", "src", 0, "eventlog", log, [P(1, "UPCOMING")], starting=given.append
    )
    assert app.batch_id is None and given == [{0: 100, 1: 100, 2: 100}]


class FakeKafka:
    """The resolver contract with canned answers (no broker runs here)."""

    def partitions(self, topic: str) -> list[int]:
        return [0, 1]

    def earliest(self, topic: str) -> dict[int, int]:
        return {0: 5, 1: 7}

    def latest(self, topic: str) -> dict[int, int]:
        return {0: 500, 1: 700}

    def offsets_for_times(self, topic: str, ts_ms: int) -> dict[int, int]:
        return {0: ts_ms // 1000, 1: ts_ms // 100}


def test_kafka_format_rewrite(tmp_path: Path) -> None:
    opts = {"subscribe": "clicks"}
    ck = write_checkpoint(tmp_path / "ck", 2, '{"clicks":{"0":100,"1":200}}')
    app = sp.apply_to_checkpoint(
        ck,
        "q",
        "src",
        0,
        "kafka",
        opts,
        [P(1, "TIMESTAMP", 42_000), P(2, "OLDEST", partition=1)],
        kafka=FakeKafka(),
    )
    assert app.before == {"0": 100, "1": 200} and app.after == {"0": 42, "1": 7}
    assert json.loads(cp.read_offsets(ck, 2)[1][0]) == {"clicks": {"0": 42, "1": 7}}
    with pytest.raises(sp.StartpointError, match="KafkaResolver"):
        sp.resolve("kafka", opts, [P(1, "OLDEST")])  # no checkpoint names the partitions


def test_kafka_without_a_resolver_takes_offset_and_oldest(tmp_path: Path) -> None:
    opts = {"subscribe": "clicks"}
    current = {0: 100, 1: 200}
    # OFFSET is not checked against an end nobody can look up; OLDEST is Spark's -2.
    assert sp.resolve("kafka", opts, [P(1, "OFFSET", 10**6)], current) == {0: 10**6, 1: 10**6}
    assert sp.resolve("kafka", opts, [P(1, "OLDEST", partition=1)], current) == {0: 100, 1: -2}
    assert sp.resolve("kafka", opts, [P(1, "OFFSET", 5, partition=3)]) == {3: 5}
    for kind in ("UPCOMING", "TIMESTAMP"):
        value = None if kind == "UPCOMING" else 5
        with pytest.raises(sp.StartpointError, match=f"kafka {kind} startpoint needs"):
            sp.resolve("kafka", opts, [P(1, kind, value)], current)
    ck = write_checkpoint(tmp_path / "ck", 2, '{"clicks":{"0":100,"1":200}}')
    app = sp.apply_to_checkpoint(ck, "q", "src", 0, "kafka", opts, [P(1, "OLDEST")])
    assert json.loads(cp.read_offsets(ck, 2)[1][0]) == {"clicks": {"0": -2, "1": -2}}
    assert app.after == {"0": -2, "1": -2}


class SparseKafka(FakeKafka):
    def offsets_for_times(self, topic: str, ts_ms: int) -> dict[int, int | None]:  # type: ignore[override]
        return {0: None, 1: 3}  # partition 0 has no record that recent


def test_kafka_timestamp_after_the_newest_record_means_the_end() -> None:
    got = sp.resolve(
        "kafka", {"subscribe": "t"}, [P(1, "TIMESTAMP", 9)], {0: 1, 1: 1}, kafka=SparseKafka()
    )
    assert got == {0: 500, 1: 3}


def _watermarked_checkpoint(path: Path, batch: int, line: str, watermark: int) -> Path:
    write_checkpoint(path, batch, line)
    meta = json.dumps({"batchWatermarkMs": watermark - 400, "batchTimestampMs": T0, "conf": {}})
    (path / "offsets" / str(batch)).write_text(f"v1\n{meta}\n{line}")
    (path / "commits" / str(batch)).write_text(f'v1\n{{"nextBatchWatermarkMs":{watermark}}}')
    return path


def _watermarks(ck: Path, batch: int) -> tuple[int, int]:
    meta, _ = cp.read_offsets(ck, batch)
    return meta["batchWatermarkMs"], cp.read_commit(ck, batch)["nextBatchWatermarkMs"]


def test_rewind_lowers_the_watermark_fast_forward_does_not(
    log: dict[str, str], tmp_path: Path
) -> None:
    line = '{"0": 80, "1": 80, "2": 80}'
    ck = _watermarked_checkpoint(tmp_path / "ck", 4, line, T0 + 69_000)
    commit_before = (ck / "commits" / "4").read_bytes()
    # Fast-forward: nothing is replayed, the watermark stays.
    sp.apply_to_checkpoint(ck, "q", "src", 0, "eventlog", log, [P(1, "OFFSET", 90)])
    assert _watermarks(ck, 4) == (T0 + 68_600, T0 + 69_000)
    assert not (ck / "commits" / ".4.tidegate-orig").exists()
    # Rewind by time: just before the startpoint's time, in both files; the originals kept.
    app = sp.apply_to_checkpoint(
        ck, "q", "src", 0, "eventlog", log, [P(2, "TIMESTAMP", T0 + 42_500)]
    )
    assert app.after == {"0": 43, "1": 43, "2": 43}
    assert _watermarks(ck, 4) == (T0 + 42_499, T0 + 42_499)
    assert (ck / "commits" / ".4.tidegate-orig").read_bytes() == commit_before
    assert (ck / "commits" / ".4.crc").read_bytes() == cp.hadoop_crc(
        (ck / "commits" / "4").read_bytes()
    )
    # Rewind by offset on one partition: the time of the first replayed record.
    sp.apply_to_checkpoint(ck, "q", "src", 0, "eventlog", log, [P(3, "OFFSET", 10, 2)])
    assert _watermarks(ck, 4) == (T0 + 9_999, T0 + 9_999)
    # Revert puts back the offsets and the watermark of before the first rewrite.
    sp.revert(ck, 4)
    assert cp.read_offsets(ck, 4)[1] == [line]
    assert _watermarks(ck, 4) == (T0 + 68_600, T0 + 69_000)


def test_revert_is_refused_once_a_later_batch_committed(
    log: dict[str, str], tmp_path: Path
) -> None:
    ck = write_checkpoint(tmp_path / "ck", 4, '{"0": 50, "1": 50, "2": 50}')
    sp.apply_to_checkpoint(ck, "q", "src", 0, "eventlog", log, [P(1, "OFFSET", 90)])
    write_checkpoint(ck, 5, '{"0": 100, "1": 100, "2": 100}')
    with pytest.raises(sp.StartpointError, match=r"committed batches 5\.\.5 .* file sink"):
        sp.revert(ck, 4)
    assert cp.read_offsets(ck, 4)[1] == ['{"0": 90, "1": 90, "2": 90}']  # untouched


def test_a_fresh_file_source_query_cannot_take_starting_offsets(tmp_path: Path) -> None:
    from tidegate_runtime.driver.runtime import Runtime

    runtime = Runtime(None, checkpoint_dir=str(tmp_path / "ck"))  # type: ignore[arg-type]
    runtime.declared = {"q": {"name": "q", "sources": [{"name": "f", "kind": "file"}]}}
    runtime.sources = {"f": {"kind": "file", "options": {"path": "/in"}}}
    runtime.startpoints = [sp.Startpoint(1, "f", None, "OFFSET", 3)]
    with pytest.raises(sp.StartpointError, match="no starting-offsets option"):
        runtime.starting_offsets(query="q")


def test_file_source_format(tmp_path: Path) -> None:
    ck = write_checkpoint(tmp_path / "ck", 3, '{"logOffset":3}')
    app = sp.apply_to_checkpoint(ck, "q", "src", 0, "file", {}, [P(1, "OFFSET", 1)])
    assert app.after == {"0": 1}
    assert json.loads(cp.read_offsets(ck, 3)[1][0]) == {"logOffset": 1}
    with pytest.raises(sp.StartpointError, match="cannot resolve TIMESTAMP"):
        sp.resolve("file", {}, [P(1, "TIMESTAMP", 5)])
    with pytest.raises(sp.StartpointError, match="kind 'socket'"):
        sp.resolve("socket", {}, [P(1, "OLDEST")])
