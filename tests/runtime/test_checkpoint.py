"""Checkpoint inspection and the startpoint rewrite of ``offsets/N``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from tests.support.spark import fill
from tidegate_runtime.checkpoints.checkpoint import (
    CheckpointError,
    hadoop_crc,
    latest_commit_batch,
    latest_offsets_batch,
    query_id,
    read_commit,
    read_offsets,
    rewrite_source_offsets,
    state_operators,
    uncommitted_batches,
)
from tidegate_runtime.sources.eventlog import EventLog, format_offsets
from tidegate_runtime.sources.eventlog_source import read_events

META = '{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}'


def fake_checkpoint(root: Path, offsets: dict[int, list[str]], commits: list[int]) -> Path:
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "metadata").write_text('{"id":"q-1"}')
    for batch, sources in offsets.items():
        (root / "offsets" / str(batch)).write_text("\n".join(["v1", META, *sources]))
    for batch in commits:
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return root


def test_inspect_a_checkpoint(tmp_path: Path) -> None:
    ck = fake_checkpoint(tmp_path / "ck", {0: ['{"0": 1}', "-"], 1: ['{"0": 2}', "7"]}, [0])
    assert query_id(ck) == "q-1"
    assert latest_offsets_batch(ck) == 1
    assert latest_commit_batch(ck) == 0
    assert uncommitted_batches(ck) == [1]
    assert read_offsets(f"file:{ck}", 0) == (json.loads(META), ['{"0": 1}', None])
    assert read_commit(ck, 0) == {"nextBatchWatermarkMs": 0}
    assert latest_offsets_batch(tmp_path / "none") is None
    assert state_operators(ck) == []


def test_the_latest_commit_is_one_helper_for_paths_file_urls_and_no_checkpoint(
    tmp_path: Path,
) -> None:
    """What the runtime's stop and drain, the worker and the snapshots all ask: the latest
    committed batch. A ``file:`` URL is the same checkpoint (it once counted as "no commit" in
    the runtime's own check); no checkpoint and nothing committed are None; ``planned`` also
    wants the batch's ``offsets/N``, which a restart or a snapshot resumes from."""
    ck = fake_checkpoint(tmp_path / "ck", {0: ['{"0": 1}'], 1: ['{"0": 2}']}, [0, 1])
    assert latest_commit_batch(ck) == latest_commit_batch(f"file:{ck}") == 1
    assert latest_commit_batch(f"file://{ck}", planned=True) == 1
    assert latest_commit_batch(None) is None
    assert latest_commit_batch("") is None
    assert latest_commit_batch(tmp_path / "none") is None
    (ck / "offsets" / "1").unlink()  # its plan gone: the commit alone resumes nothing
    assert latest_commit_batch(ck) == 1
    assert latest_commit_batch(ck, planned=True) is None
    fresh = fake_checkpoint(tmp_path / "fresh", {0: ['{"0": 1}']}, [])
    assert latest_commit_batch(fresh) is None


def test_rewrite_refuses_what_spark_would_not_honour(tmp_path: Path) -> None:
    ck = fake_checkpoint(tmp_path / "ck", {0: ['{"0": 1}'], 1: ['{"0": 2}']}, [0])
    with pytest.raises(CheckpointError, match="not committed"):
        rewrite_source_offsets(ck, 1, 0, '{"0": 0}')
    with pytest.raises(CheckpointError, match="after 0"):
        rewrite_source_offsets(ck, 0, 0, '{"0": 0}')
    with pytest.raises(CheckpointError, match="no source 1"):
        rewrite_source_offsets(ck, 0, 1, '{"0": 0}', discard_uncommitted=True)
    with pytest.raises(CheckpointError, match="JSON"):
        rewrite_source_offsets(ck, 0, 0, "{oops", discard_uncommitted=True)
    assert latest_offsets_batch(ck) == 1  # nothing changed yet

    backup = rewrite_source_offsets(ck, 0, 0, '{"0": 0}', discard_uncommitted=True)
    assert latest_offsets_batch(ck) == 0
    assert (ck / "offsets" / ".1.tidegate-discarded").exists()
    assert Path(backup).read_text() == "\n".join(["v1", META, '{"0": 1}'])
    rewrite_source_offsets(ck, 0, 0, '{"0": 5}')
    assert Path(backup).read_text().endswith('{"0": 1}')  # the first original is kept
    data = (ck / "offsets" / "0").read_bytes()
    assert data == "\n".join(["v1", META, '{"0": 5}']).encode()
    assert (ck / "offsets" / ".0.crc").read_bytes() == hadoop_crc(data)


@pytest.mark.spark
def test_rewritten_offsets_rerun_from_there_with_state_kept(
    spark: SparkSession, log: EventLog, tmp_path: Path
) -> None:
    stream = log.create_stream("s", 1)
    fill(stream, 0, 100)
    checkpoint = tmp_path / "ck"

    def run() -> tuple[int, dict[str, Any]]:
        query = (
            read_events(spark, str(log.root), "s")
            .groupBy()
            .count()
            .writeStream.format("memory")
            .queryName("counts")
            .outputMode("complete")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        progress = json.loads(query.lastProgress.json) if query.lastProgress else {}
        return spark.table("counts").collect()[0]["count"], progress

    count, _ = run()
    assert count == 100
    batch = latest_commit_batch(checkpoint)
    assert batch is not None and latest_offsets_batch(checkpoint) == batch
    _, sources = read_offsets(checkpoint, batch)
    assert sources == ['{"0": 100}']
    original = (checkpoint / "offsets" / str(batch)).read_bytes()
    crc = checkpoint / "offsets" / f".{batch}.crc"
    assert crc.read_bytes() == hadoop_crc(original)  # our sidecar is what Hadoop writes

    fill(stream, 0, 20)
    rewrite_source_offsets(checkpoint, batch, 0, format_offsets({0: 50}))
    count, progress = run()
    assert count == 170  # 100 from the kept state + 50..119 re-read
    assert progress["batchId"] == batch + 1
    source = progress["sources"][0]
    assert (source["startOffset"], source["endOffset"], source["numInputRows"]) == (
        {"0": 50},
        {"0": 120},
        70,
    )
    assert (checkpoint / "offsets" / f".{batch}.tidegate-orig").read_bytes() == original

    (operator,) = state_operators(checkpoint)
    assert (operator.operator_id, operator.operator_name, operator.num_partitions) == (
        0,
        "stateStoreSave",
        2,
    )
    assert operator.store_names == ("default",)
    assert operator.value_schema is not None
    assert [f["name"] for f in operator.value_schema["fields"]] == ["count"]


@pytest.mark.spark
def test_revert_on_a_spark_checkpoint_until_a_later_batch_commits(
    spark: SparkSession, log: EventLog, tmp_path: Path
) -> None:
    from tidegate_runtime.sources import positions as sp

    stream = log.create_stream("r", 1)
    fill(stream, 0, 100)
    checkpoint = tmp_path / "ck"
    opts = {"root": str(log.root), "stream": "r"}

    def run() -> int:
        query = (
            read_events(spark, str(log.root), "r")
            .groupBy()
            .count()
            .writeStream.format("memory")
            .queryName("reverted")
            .outputMode("complete")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        return int(spark.table("reverted").collect()[0]["count"])

    assert run() == 100
    batch = latest_commit_batch(checkpoint)
    assert batch is not None
    rewind = [sp.Startpoint(1, "r", None, "OFFSET", 50)]
    app = sp.apply_to_checkpoint(checkpoint, "q", "r", 0, "eventlog", opts, rewind)
    assert app.batch_id == batch and app.after == {"0": 50}
    # Stopped before a batch ran from it: revert, and Spark reads on from 100, not 50.
    sp.revert(checkpoint, batch)
    fill(stream, 0, 20)
    assert run() == 120
    # Applied again and a batch committed from it (50..139 re-read into the state): the
    # revert is refused and the checkpoint left alone.
    fill(stream, 0, 20)
    batch = latest_commit_batch(checkpoint)
    assert batch is not None
    app = sp.apply_to_checkpoint(checkpoint, "q", "r", 0, "eventlog", opts, rewind)
    assert run() == 120 + 90
    latest = latest_commit_batch(checkpoint)
    assert latest is not None and latest > batch
    with pytest.raises(sp.StartpointError, match=f"committed batches {batch + 1}\\.\\.{latest}"):
        sp.revert(checkpoint, batch)
    assert read_offsets(checkpoint, latest)[1] == ['{"0": 140}']
