"""Benchmark: exporting a snapshot of a checkpoint with large state, against ``cp -r``.

    .venv/bin/python bench/snapshots.py                 # ~64 MB of state, about a minute
    .venv/bin/python bench/snapshots.py --size-mb 500   # the full run
    .venv/bin/python bench/snapshots.py --real          # a real windowed-counts checkpoint
    .venv/bin/python bench/snapshots.py --layout rocksdb --size-mb 1000   # RocksDB, 1 GB
    .venv/bin/python bench/snapshots.py --real --layout rocksdb   # real, on RocksDB

What is measured, per repetition, on one filesystem and with the page cache warm for both:

1. **first export**: ``select_files`` + ``SnapshotStore.put_files`` (hash, copy each file once
   into ``blobs/``) + the manifest, into an empty store — exactly what the worker's export
   step does, minus the catalog row;
2. **cp -r** of the same checkpoint directory;
3. **second export** after ``--more-batches`` more batches, into the same store, with the hash
   cache the worker uses (files of the previous manifest whose path, size and mtime did not
   change are not read again): bytes written and time as a ratio of the first export;
4. the same second export **without the hash cache** (every file hashed again);
5. the same first export **by hard links** (``TIDEGATE_SNAPSHOT_EXPORT_LINKS``): each new
   blob the checkpoint file it was hashed from, so only the hash reads the bytes;
6. **restore** of the second snapshot into an empty folder (what a start from a snapshot
   does before go), copied with each hash checked (the default) and by hard links
   (``TIDEGATE_SNAPSHOT_RESTORE_LINKS``), against ``cp -r`` of the same files;
7. the **memory** this process needed for all of it: the growth of its peak RSS, which
   must stay a few tens of MB whatever the state's size (files are streamed, never read
   whole).

By default the checkpoint is synthesised: the layout Spark's HDFS state store provider writes
(``offsets/N``, ``commits/N``, ``state/0/<partition>/<version>.delta`` with ``.crc`` sidecars,
operator metadata and schema), with incompressible deltas of equal size per batch. Real state
of hundreds of MB would take many minutes of local Spark on a small machine to produce, and
the export only depends on file count and sizes. No ``.snapshot`` files are synthesised, so
the export selects every file and ``cp -r`` copies exactly the same bytes. ``--layout
rocksdb`` synthesises what Spark's RocksDB provider writes with changelog checkpointing
instead: a ``V.changelog`` per batch and, every ``ROCKSDB_SNAPSHOT_EVERY`` batches, a
``V.zip`` and a new SST file holding what those changelogs added (SSTs are immutable and
shared by every later version; no compaction is modelled). ``--real`` instead runs the
windowed-counts pipeline in local mode over ``--real-records`` unique keys (``--layout
rocksdb``: on the RocksDB provider with changelog checkpointing).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.snapshots.checkpoint_files import select_files
from app.snapshots.store import blobs as store_module
from app.snapshots.store.blobs import PutResult, SnapshotStore
from app.snapshots.store.local_tree import known_hashes
from bench.common import save
from tidegate_runtime.checkpoints.checkpoint import hadoop_crc, latest_commit_batch

PARTITIONS = 4


def _write_random(path: Path, size: int) -> None:
    """``size`` random bytes, written 1 MiB at a time: making the state must not raise this
    process's peak RSS, which is what the export and restore are measured by."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        for offset in range(0, size, 1 << 20):
            f.write(os.urandom(min(1 << 20, size - offset)))


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.with_name(f".{path.name}.crc").write_bytes(hadoop_crc(data))


@dataclass
class Synthetic:
    """A checkpoint growing batch by batch like a windowed aggregation's."""

    root: Path
    delta_bytes: int
    batches: int = 0

    def __post_init__(self) -> None:
        _write(self.root / "metadata", b'{"id":"bench"}')
        info = {
            "operatorInfo": {"operatorId": 0, "operatorName": "stateStoreSave"},
            "stateStoreInfo": [
                {"storeName": "default", "numColsPrefixKey": 0, "numPartitions": PARTITIONS}
            ],
        }
        _write(self.root / "state/0/_metadata/metadata", f"v1\n{json.dumps(info)}".encode())

    def batch(self) -> None:
        n = self.batches
        meta = {"batchWatermarkMs": n, "batchTimestampMs": n, "conf": {}}
        _write(self.root / f"offsets/{n}", f'v1\n{json.dumps(meta)}\n{{"0": {n}}}'.encode())
        for p in range(PARTITIONS):
            _write(self.root / f"state/0/{p}/{n + 1}.delta", os.urandom(self.delta_bytes))
        _write(self.root / f"commits/{n}", b'v1\n{"nextBatchWatermarkMs":0}')
        self.batches += 1


ROCKSDB_SNAPSHOT_EVERY = 10


@dataclass
class SyntheticRocksDB:
    """A checkpoint growing batch by batch as the RocksDB provider with changelog
    checkpointing writes it: changelogs, and now and then a zip and a new shared SST."""

    root: Path
    delta_bytes: int
    batches: int = 0

    def __post_init__(self) -> None:
        _write(self.root / "metadata", b'{"id":"bench"}')
        info = {
            "operatorInfo": {"operatorId": 0, "operatorName": "dedupeWithinWatermark"},
            "stateStoreInfo": [
                {"storeName": "default", "numColsPrefixKey": 0, "numPartitions": PARTITIONS}
            ],
        }
        _write(self.root / "state/0/_metadata/metadata", f"v1\n{json.dumps(info)}".encode())

    def batch(self) -> None:
        n = self.batches
        conf = {"spark.sql.streaming.stateStore.providerClass": "RocksDBStateStoreProvider"}
        meta = {"batchWatermarkMs": n, "batchTimestampMs": n, "conf": conf}
        _write(self.root / f"offsets/{n}", f'v1\n{json.dumps(meta)}\n{{"0": {n}}}'.encode())
        version = n + 1
        for p in range(PARTITIONS):
            store = self.root / f"state/0/{p}"
            _write_random(store / f"{version}.changelog", self.delta_bytes)
            if version % ROCKSDB_SNAPSHOT_EVERY == 0:
                # The memtable flushed: one more immutable SST, and a zip naming them all.
                sst = store / "SSTs" / f"{version:06d}-{os.urandom(8).hex()}.sst"
                _write_random(sst, self.delta_bytes * ROCKSDB_SNAPSHOT_EVERY)
                _write(store / f"{version}.zip", os.urandom(4096))
        _write(self.root / f"commits/{n}", b'v1\n{"nextBatchWatermarkMs":0}')
        self.batches += 1


def real_checkpoint(work: Path, records: int, rocksdb: bool = False) -> tuple[Path, Any]:
    """Windowed counts over ``records`` unique keys in local mode; returns the checkpoint and
    a function that runs a few more batches."""
    from pyspark.sql import SparkSession

    from pipelines.register_examples import ROCKSDB_CONF
    from pipelines.windowed_counts import build_windowed_counts
    from tidegate_runtime.sources.eventlog import EventLog
    from tidegate_runtime.sources.eventlog_producer import produce
    from tidegate_runtime.sources.eventlog_source import read_events

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root, ck, out = work / "log", work / "ck", work / "out"
    EventLog(root).create_stream("s", 2)
    builder = SparkSession.builder
    if rocksdb:
        for key, value in ROCKSDB_CONF.items():
            builder = builder.config(key, value)
    spark = (
        builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(PARTITIONS))
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    start = 1_767_225_600_000
    state = {"next_key": 0}

    def run(count: int) -> None:
        # Unique keys, all within one open window: every record adds a state row.
        first = state["next_key"]
        keys = [f"key-{i:09d}" for i in range(first, first + count)]
        state["next_key"] = first + count
        produce(str(root), "s", 2, rate=0, count=count, start_ts_ms=start, ts_step_ms=0, keys=keys)
        query = (
            build_windowed_counts(read_events(spark, str(root), "s", maxRecordsPerBatch="50000"))
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(ck))
            .outputMode("append")
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()

    run(records)
    return ck, lambda: run(max(1, records // 20))


def export(store: SnapshotStore, ck: Path, name: str, known: Any = None) -> tuple[float, PutResult]:
    t = time.perf_counter()
    batch = latest_commit_batch(ck, planned=True)
    assert batch is not None
    selection = select_files(ck, batch)
    put = store.put_files(ck, selection.files, known)
    store.write_manifest(
        "bench",
        name,
        {"queries": {"q": {"batch_id": batch, "checkpoint": str(ck), "files": put.entries}}},
    )
    return time.perf_counter() - t, put


def serial_export(root: Path, ck: Path) -> float:
    """The first export into a store of its own, one file at a time (hash, then copy)."""
    store = SnapshotStore(str(root))
    store.threads = 1
    seconds, _ = export(store, ck, "serial")
    shutil.rmtree(root)
    return seconds


def linked_export(root: Path, ck: Path) -> float:
    """The first export into a store of its own, each new blob a hard link to the checkpoint
    file it was hashed from (TIDEGATE_SNAPSHOT_EXPORT_LINKS)."""
    store = SnapshotStore(str(root), link_exports=True)
    seconds, _ = export(store, ck, "linked")
    shutil.rmtree(root)
    return seconds


def cp_r(src: Path, dest: Path, files: list[str] | None = None) -> float:
    """``cp -r src dest``; with ``files``, ``cp --parents`` of just those (the RocksDB
    layout keeps changelogs a snapshot does not need: the same bytes on both sides)."""
    t = time.perf_counter()
    if files is None:
        subprocess.run(["cp", "-r", str(src), str(dest)], check=True)
    else:
        dest.mkdir(parents=True)
        subprocess.run(["cp", "--parents", "-t", str(dest), *files], check=True, cwd=src)
    return time.perf_counter() - t


def restore(store: SnapshotStore, name: str, dest: Path, link: bool = False) -> float:
    manifest = store.read_manifest("bench", name)
    assert manifest is not None
    t = time.perf_counter()
    store.restore(manifest["queries"]["q"]["files"], dest, link=link)
    return time.perf_counter() - t


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def mb(n: float) -> str:
    return f"{n / 1e6:8.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=64, help="state size (synthetic)")
    parser.add_argument("--batches", type=int, default=50, help="batches before the first export")
    parser.add_argument("--more-batches", type=int, default=3, help="before the second export")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--real", action="store_true", help="a real windowed-counts checkpoint")
    parser.add_argument("--real-records", type=int, default=200_000)
    parser.add_argument("--layout", choices=("hdfs", "rocksdb"), default="hdfs")
    parser.add_argument("--dir", type=Path, default=None, help="work directory (default: tmp)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="tidegate-bench-", dir=args.dir))
    try:
        kinds = (
            "export1",
            "linked1",
            "serial1",
            "cp1",
            "export2",
            "nocache2",
            "cp2",
            "restore",
            "restore_link",
            "cp3",
        )
        rows: dict[str, list[float]] = {k: [] for k in kinds}
        rss_before = peak_rss_mb()
        written: dict[str, list[int]] = {"first": [], "second": [], "ref1": [], "ref2": []}
        files = 0
        for rep in range(args.reps):
            base = work / f"rep{rep}"
            base.mkdir()
            rocksdb = args.layout == "rocksdb"
            if args.real:
                ck, more = real_checkpoint(base, args.real_records, rocksdb)
            else:
                delta = args.size_mb * 1_000_000 // (args.batches * PARTITIONS)
                synthetic = (SyntheticRocksDB if rocksdb else Synthetic)(base / "ck", delta)
                for _ in range(args.batches):
                    synthetic.batch()
                ck, more = synthetic.root, synthetic.batch
            store = SnapshotStore(str(base / "store"))
            same = (
                None
                if not rocksdb
                else select_files(ck, latest_commit_batch(ck, planned=True) or 0).files
            )
            # Alternate the order so neither side always gets the warmer cache. The export
            # with one file at a time (as before PUT_THREADS) is measured beside it.
            if rep % 2:
                rows["cp1"].append(cp_r(ck, base / "copy1", same))
                rows["linked1"].append(linked_export(base / "linked-store", ck))
                rows["serial1"].append(serial_export(base / "serial", ck))
                seconds, first = export(store, ck, "s1")
            else:
                seconds, first = export(store, ck, "s1")
                rows["serial1"].append(serial_export(base / "serial", ck))
                rows["linked1"].append(linked_export(base / "linked-store", ck))
                rows["cp1"].append(cp_r(ck, base / "copy1", same))
            rows["export1"].append(seconds)
            files = len(first.entries)
            for _ in range(args.more_batches):
                more()
            known = known_hashes(ck, first.entries)
            seconds, second = export(store, ck, "s2", known)
            rows["export2"].append(seconds)
            seconds, _ = export(SnapshotStore(str(base / "store")), ck, "s3")
            rows["nocache2"].append(seconds)
            same = (
                None
                if not rocksdb
                else select_files(ck, latest_commit_batch(ck, planned=True) or 0).files
            )
            rows["cp2"].append(cp_r(ck, base / "copy2", same))
            # Restore the second snapshot, against cp -r of exactly its files.
            shutil.rmtree(base / "copy1")
            shutil.rmtree(base / "copy2")
            rows["restore"].append(restore(store, "s2", base / "restored"))
            rows["restore_link"].append(restore(store, "s2", base / "linked", link=True))
            rows["cp3"].append(cp_r(base / "restored", base / "copy3"))
            written["first"].append(first.bytes_written)
            written["ref1"].append(first.bytes_referenced)
            written["second"].append(second.bytes_written)
            written["ref2"].append(second.bytes_referenced)
            shutil.rmtree(base)

        rss_growth = peak_rss_mb() - rss_before
        med = {k: statistics.median(v) for k, v in rows.items()}
        w = {k: statistics.median(v) for k, v in written.items()}
        kind = f"real windowed counts, {args.real_records} keys" if args.real else "synthetic"
        kind += f", {args.layout} layout"
        print(
            f"checkpoint: {kind}; {mb(w['ref1']).strip()} in {files} files, "
            f"{PARTITIONS} state partitions; {args.reps} reps, medians"
        )
        print(f"  first export          {med['export1']:7.3f} s   wrote {mb(w['first'])}")
        print(f"  cp -r (same files)    {med['cp1']:7.3f} s")
        print(f"  export / cp -r        {med['export1'] / med['cp1']:7.2f} x")
        print(
            f"  first export by links {med['linked1']:7.3f} s   "
            f"({med['linked1'] / med['cp1']:.2f} x cp -r; TIDEGATE_SNAPSHOT_EXPORT_LINKS)"
        )
        print(
            f"  one file at a time    {med['serial1']:7.3f} s   "
            f"({med['serial1'] / med['cp1']:.2f} x cp -r; {store_module.PUT_THREADS} at a time is "
            f"{med['export1'] / med['serial1']:.2f} x of it)"
        )
        print(
            f"  second export (+{args.more_batches} batches, hash cache)"
            f"  {med['export2']:7.3f} s   wrote {mb(w['second'])} of {mb(w['ref2']).strip()}"
        )
        print(
            f"  second / first: time  {med['export2'] / med['export1']:7.3f}    "
            f"bytes written {w['second'] / w['first']:.3f}"
        )
        print(
            f"  second export, no hash cache  {med['nocache2']:7.3f} s "
            f"({med['nocache2'] / med['export1']:.2f} of the first)"
        )
        print(
            f"  cp -r after +{args.more_batches} batches   {med['cp2']:7.3f} s "
            f"(second export / cp -r {med['export2'] / med['cp2']:.3f})"
        )
        print(
            f"  restore (second)      {med['restore']:7.3f} s   cp -r of its files "
            f"{med['cp3']:7.3f} s   restore / cp -r {med['restore'] / med['cp3']:.2f} x"
        )
        print(
            f"  restore by hard links {med['restore_link']:7.3f} s   "
            f"({med['restore_link'] / med['cp3']:.2f} x cp -r; TIDEGATE_SNAPSHOT_RESTORE_LINKS)"
        )
        print(f"  peak RSS growth of this process over all of it: {rss_growth:.0f} MB")
        layout = "" if args.layout == "hdfs" else f"-{args.layout}"
        save(
            ("snapshots-real" if args.real else f"snapshots-{args.size_mb}mb") + layout,
            {
                "checkpoint": kind,
                "size_bytes": w["ref1"],
                "files": files,
                "reps": args.reps,
                "more_batches": args.more_batches,
                "median_seconds": med,
                "bytes_written": {"first": w["first"], "second": w["second"]},
                "layout": args.layout,
                "peak_rss_growth_mb": rss_growth,
                "ratios": {
                    "restore_over_cp": med["restore"] / med["cp3"],
                    "restore_links_over_cp": med["restore_link"] / med["cp3"],
                    "export_over_cp": med["export1"] / med["cp1"],
                    "export_links_over_cp": med["linked1"] / med["cp1"],
                    "serial_export_over_cp": med["serial1"] / med["cp1"],
                    "put_threads": store_module.PUT_THREADS,
                    "second_over_first_time": med["export2"] / med["export1"],
                    "second_over_first_bytes": w["second"] / w["first"],
                },
            },
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
