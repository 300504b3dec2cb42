"""What the snapshot store names a file's content by: a content id, ``<algorithm>:<hex>``.

New files are hashed with BLAKE3, a cryptographic hash like SHA-256 that hashes about 7.7 GB/s
a core here against SHA-256's 2.0 (with the CPU's SHA extensions): hashing, not copying, was
what kept a first export at 1.7x ``cp`` of the same files on two cores (bench/snapshots.py),
and a restore checks every hash it copies. Manifests of format 1 named files by SHA-256.
Their blobs stay where they are, are still checked on restore and still shared: a file an
older snapshot holds is known by its SHA-256 id and not written again.

A manifest entry names its content by the algorithm's key (``{"blake3": hex, "size": …}`` or
``{"sha256": hex, …}``); everywhere else in the store the content id is one string.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import blake3

from app.snapshots.errors import StoreError

ALGORITHM = "blake3"
HASH_CHUNK = 1024 * 1024
_HEX = re.compile(r"[0-9a-f]{64}")


class Hasher(Protocol):
    def update(self, data: bytes | memoryview, /) -> object: ...
    def hexdigest(self) -> str: ...


# Both release the GIL while they hash: the store's threads hash files side by side.
_HASHERS: dict[str, Callable[[], Hasher]] = {
    "blake3": blake3.blake3,
    "sha256": hashlib.sha256,
}


def parse(content_id: str) -> tuple[str, str]:
    """(algorithm, hex digest) of a content id; StoreError for anything else (an id is part
    of a blob's path, so nothing but a known algorithm and 64 hex digits gets through)."""
    algorithm, _, digest = content_id.partition(":")
    if algorithm not in _HASHERS or not _HEX.fullmatch(digest):
        raise StoreError(f"not a content id: {content_id[:80]!r}")
    return algorithm, digest


def content_id(entry: Mapping[str, Any]) -> str:
    """The content id a manifest entry (or a restore's hint) names."""
    for algorithm in _HASHERS:
        if algorithm in entry:
            content = f"{algorithm}:{entry[algorithm]}"
            parse(content)
            return content
    raise StoreError(f"a manifest entry names no content hash: {sorted(entry)[:5]}")


def from_mark(value: str) -> str:
    """A content id as a prestage mark holds it: a bare hex digest was written as SHA-256
    before BLAKE3 (an update begun by the earlier version, finished by this one)."""
    return f"sha256:{value}" if _HEX.fullmatch(value) else value


def entry(content: str, size: int, mtime_ns: int) -> dict[str, Any]:
    """A manifest entry: the content id, and the file's size and mtime for the hash cache."""
    algorithm, digest = parse(content)
    return {algorithm: digest, "size": size, "mtime_ns": mtime_ns}


def hasher(content: str) -> Hasher:
    """A fresh hasher of the algorithm ``content`` is named by, to check a copy of it."""
    return _HASHERS[parse(content)[0]]()


def new_hasher() -> Hasher:
    """A hasher of the algorithm new files are named by (``content`` names its result)."""
    return _HASHERS[ALGORITHM]()


def content(digest: Hasher) -> str:
    """The content id of what ``digest`` (from ``new_hasher``) has hashed."""
    return f"{ALGORITHM}:{digest.hexdigest()}"


def blob_rel(content: str) -> str:
    """Where a content's blob lives under ``blobs/``: SHA-256 ones where format 1 put them
    (two-level fan-out, like git), BLAKE3 ones under ``blake3/``."""
    algorithm, digest = parse(content)
    fanned = f"{digest[:2]}/{digest}"
    return fanned if algorithm == "sha256" else f"{algorithm}/{fanned}"


def hash_fd(fd: int) -> str:
    """The content id of an open file, read from its start.

    One buffer per file, read into: the store's threads hashing at once allocate no 1 MiB
    object per read (the process's RSS stays flat, bench/snapshots.py)."""
    digest = _HASHERS[ALGORITHM]()
    buffer = bytearray(HASH_CHUNK)
    view = memoryview(buffer)
    offset = 0
    while read := os.preadv(fd, [buffer], offset):
        digest.update(view[:read])
        offset += read
    return f"{ALGORITHM}:{digest.hexdigest()}"
