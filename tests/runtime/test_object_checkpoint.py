"""A checkpoint in object storage (``s3a://bucket/prefix``) read and edited through the same
functions as a local one (tidegate_runtime/checkpoints/checkpoint.py over
tidegate_runtime/checkpoints/object_dir.py), against a real S3 server (moto's, over HTTP on
loopback): the startpoint rewrite, its revert, a drain's flush batch; no Hadoop ``.crc`` sidecar
written where Spark's S3A keeps none; names that leave the folder and metadata files over their
limit refused as locally."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import fsspec
import pytest

from tests.support.s3 import ACCESS_KEY, REGION, SECRET_KEY, create_bucket, moto_server
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.checkpoints.held_dir import TooLarge, UnsafeEntry
from tidegate_runtime.checkpoints.object_dir import ObjectDir

META = '{"batchWatermarkMs":7000,"batchTimestampMs":1,"conf":{}}'


@pytest.fixture(scope="module")
def store() -> Iterator[tuple[Any, str]]:
    """An s3fs client of a fresh bucket on a moto server, registered for ``s3a://``."""
    with moto_server() as endpoint:
        bucket = create_bucket(endpoint)
        fs = fsspec.filesystem(
            "s3",
            key=ACCESS_KEY,
            secret=SECRET_KEY,
            client_kwargs={"endpoint_url": endpoint, "region_name": REGION},
            skip_instance_cache=True,
        )
        cp.register_store("s3a", lambda url: ObjectDir(fs, url))
        try:
            yield fs, bucket
        finally:
            cp._STORES.pop("s3a", None)


def _checkpoint(fs: Any, bucket: str, name: str) -> str:
    """Spark's layout as its S3A writes it: no .crc sidecars. Batches 0 and 1 planned, 0
    committed."""
    key = f"{bucket}/{name}"
    fs.pipe_file(f"{key}/metadata", b'{"id":"q-1"}')
    fs.pipe_file(f"{key}/offsets/0", "\n".join(["v1", META, '{"t":{"0":4}}']).encode())
    fs.pipe_file(f"{key}/offsets/1", "\n".join(["v1", META, '{"t":{"0":9}}']).encode())
    fs.pipe_file(f"{key}/commits/0", b'v1\n{"nextBatchWatermarkMs":7000}')
    return f"s3a://{key}"


def test_a_checkpoint_in_s3_reads_as_a_local_one(store: tuple[Any, str]) -> None:
    fs, bucket = store
    url = _checkpoint(fs, bucket, "read")
    assert cp.query_id(url) == "q-1"
    assert (cp.latest_offsets_batch(url), cp.latest_commit_batch(url)) == (1, 0)
    assert cp.uncommitted_batches(url) == [1]
    assert cp.read_offsets(url, 0) == (
        {"batchWatermarkMs": 7000, "batchTimestampMs": 1, "conf": {}},
        ['{"t":{"0":4}}'],
    )
    assert cp.latest_commit_batch(f"s3a://{bucket}/nothing-here") is None


def test_a_rewind_its_revert_and_a_flush_batch_in_s3(store: tuple[Any, str]) -> None:
    fs, bucket = store
    url = _checkpoint(fs, bucket, "edit")
    backup = cp.rewrite_source_offsets(
        url, 0, 0, '{"t":{"0":1}}', discard_uncommitted=True, watermark_ms=5000
    )
    assert backup == f"{url}/offsets/.0.tidegate-orig"
    assert cp.read_offsets(url, 0) == (
        {"batchWatermarkMs": 5000, "batchTimestampMs": 1, "conf": {}},
        ['{"t":{"0":1}}'],
    )
    assert cp.read_commit(url, 0) == {"nextBatchWatermarkMs": 5000}
    assert cp.uncommitted_batches(url) == []  # batch 1 set aside, as Spark's log ignores
    keys = sorted(k.rsplit(f"{bucket}/edit/", 1)[1] for k in fs.find(f"{bucket}/edit"))
    assert keys == [
        "commits/.0.tidegate-orig",
        "commits/0",
        "metadata",
        "offsets/.0.tidegate-orig",
        "offsets/.1.tidegate-discarded",
        "offsets/0",
    ]  # no .crc: Spark's S3A neither writes nor reads them

    cp.restore_batch(url, 0)
    assert cp.read_offsets(url, 0)[1] == ['{"t":{"0":4}}']
    assert cp.read_commit(url, 0) == {"nextBatchWatermarkMs": 7000}

    assert not cp.ends_in_flush(url)
    assert cp.plan_flush_batch(url) == 1
    metadata, lines = cp.read_offsets(url, 1)
    assert metadata["batchWatermarkMs"] == cp.FLUSH_WATERMARK_MS and lines == ['{"t":{"0":4}}']
    assert cp.ends_in_flush(url) and cp.plan_flush_batch(url) == 1  # a retry keeps it


def test_names_leaving_the_folder_and_oversized_files_are_refused(
    store: tuple[Any, str],
) -> None:
    fs, bucket = store
    url = _checkpoint(fs, bucket, "guarded")
    folder = ObjectDir(fs, url)
    with pytest.raises(UnsafeEntry):
        folder.read("../read/metadata")
    with pytest.raises(UnsafeEntry):
        folder.write_atomic("/etc/passwd", b"x")
    with pytest.raises(TooLarge):
        folder.read("offsets/0", limit=10)
    assert folder.names() == ["commits", "metadata", "offsets"]
    assert folder.names("offsets") == ["0", "1"] and folder.names("none") == []


def test_a_scheme_with_no_file_system_configured_says_so() -> None:
    with pytest.raises(cp.CheckpointError, match=r"no gs:// file system is configured here"):
        cp.latest_commit_batch("gs://bucket/ck/q")


def test_a_stop_reads_a_batch_under_way_in_s3(store: tuple[Any, str]) -> None:
    """The stop at a batch boundary reads the plan and the commits of a checkpoint in object
    storage as of a local one: a batch planned and not committed is one under way (before,
    an ``s3a://`` checkpoint read as "nothing to tell" and a query whose batches outlast its
    trigger was told to end only after half the stop's timeout: 60 s in bench/RESULTS.md)."""
    from tidegate_runtime.driver import batch_boundary

    fs, bucket = store
    url = _checkpoint(fs, bucket, "stopping")
    assert batch_boundary._readable(url)
    assert batch_boundary._batches_paired(url) is False  # batch 1 planned, not committed
    fs.pipe_file(f"{bucket}/stopping/commits/1", b'v1\n{"nextBatchWatermarkMs":7000}')
    assert batch_boundary._batches_paired(url) is True
