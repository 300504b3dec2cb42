"""Content ids: what the snapshot store names a file's content by (``digests``)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import blake3
import pytest

from app.snapshots.errors import StoreError
from app.snapshots.store import digests


def test_a_file_is_named_by_its_blake3_read_whole(tmp_path: Path) -> None:
    data = os.urandom(3 * digests.HASH_CHUNK + 17)  # more than one read, the last one short
    path = tmp_path / "f"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        content = digests.hash_fd(fd)
    finally:
        os.close(fd)
    assert content == f"blake3:{blake3.blake3(data).hexdigest()}"
    entry = digests.entry(content, len(data), 5)
    assert entry == {"blake3": blake3.blake3(data).hexdigest(), "size": len(data), "mtime_ns": 5}
    assert digests.content_id(entry) == content
    checker = digests.hasher(content)
    checker.update(data)
    assert checker.hexdigest() == digests.parse(content)[1]


def test_blobs_of_either_algorithm_have_their_own_place() -> None:
    sha = hashlib.sha256(b"x").hexdigest()
    b3 = blake3.blake3(b"x").hexdigest()
    assert digests.blob_rel(f"sha256:{sha}") == f"{sha[:2]}/{sha}"  # where format 1 put them
    assert digests.blob_rel(f"blake3:{b3}") == f"blake3/{b3[:2]}/{b3}"
    assert digests.content_id({"sha256": sha, "size": 1}) == f"sha256:{sha}"


def test_a_prestage_mark_of_the_earlier_version_reads_as_sha256() -> None:
    sha = hashlib.sha256(b"x").hexdigest()
    assert digests.from_mark(sha) == f"sha256:{sha}"
    assert digests.from_mark(f"blake3:{sha}") == f"blake3:{sha}"


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "blake3:",
        "md5:" + "0" * 64,
        "blake3:" + "0" * 63,
        "blake3:" + "A" * 64,
        "sha256:../../etc/passwd",
        "blake3:" + "0" * 64 + "/x",
        "0" * 64,
    ],
)
def test_anything_but_a_content_id_is_refused_before_it_names_a_path(bad: str) -> None:
    with pytest.raises(StoreError, match="not a content id"):
        digests.blob_rel(bad)
