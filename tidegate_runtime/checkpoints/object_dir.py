"""A checkpoint folder in object storage (``s3a://bucket/prefix``), read and written through the
same methods as ``HeldDir``, its local twin, so checkpoint code (``checkpoint.py``) does not care
where a checkpoint lives. Standard library only: the store's client is handed in, anything with
fsspec's file-system methods (``ls``, ``info``, ``cat_file``, ``pipe_file``, ``rm_file``,
``mv``, ``exists``, ``isdir``): s3fs in the worker, the driver's own through its Hadoop
configuration.

What a held local folder guards against cannot happen here: an object store has no links, no
FIFOs, no folders to swap; names are keys below the folder's prefix, never above it (``..`` and
absolute names are refused as locally). Sizes are checked before a read as locally: a metadata
file over its limit is never read into memory. A write is one PUT: whole or absent. A rename is
a copy then a delete (no object store renames in place): not atomic, so checkpoint code renames
only its own side files (kept originals, discarded batches), never one Spark reads.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Protocol

from tidegate_runtime.checkpoints.held_dir import READ_LIMIT, TooLarge, _parts


class ObjectFileSystem(Protocol):
    """The part of an fsspec file system an ``ObjectDir`` uses (paths without a scheme)."""

    def ls(self, path: str, detail: bool = ...) -> list[Any]: ...
    def info(self, path: str) -> dict[str, Any]: ...
    def cat_file(self, path: str, start: int | None = ..., end: int | None = ...) -> bytes: ...
    def pipe_file(self, path: str, value: bytes) -> Any: ...
    def rm_file(self, path: str) -> Any: ...
    def mv(self, path1: str, path2: str) -> Any: ...
    def exists(self, path: str) -> bool: ...
    def isdir(self, path: str) -> bool: ...


class UrlPath(str):
    """A folder's URL that ``/`` extends, as a ``Path`` does (messages and labels only)."""

    def __truediv__(self, rel: str) -> UrlPath:
        return UrlPath(f"{self.rstrip('/')}/{rel}")

    @property
    def name(self) -> str:
        return self.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parent(self) -> UrlPath:
        return UrlPath(self.rstrip("/").rsplit("/", 1)[0])


def split_url(url: str) -> tuple[str, str]:
    """``s3a://bucket/prefix`` → (``s3a``, ``bucket/prefix``)."""
    scheme, sep, rest = url.partition("://")
    if not sep or not rest.strip("/"):
        raise ValueError(f"not an object store URL: {url!r}")
    return scheme.lower(), rest.strip("/")


class ObjectDir:
    """The folder ``url`` (``scheme://bucket/prefix``) of the object store ``fs``."""

    checksums = False  # Hadoop's S3A keeps no .crc sidecars; neither does tidegate there

    def __init__(self, fs: ObjectFileSystem, url: str) -> None:
        self.fs = fs
        self.scheme, self.key = split_url(url)
        self.path = UrlPath(f"{self.scheme}://{self.key}")

    def _key(self, rel: str) -> str:
        return self.key if not rel else f"{self.key}/{'/'.join(_parts(rel))}"

    # ---- reaching one ------------------------------------------------------------------

    def child(self, rel: str, *, create: bool = False) -> ObjectDir:
        """The folder ``rel`` below this one (an object store makes folders as it writes)."""
        return ObjectDir(self.fs, f"{self.scheme}://{self._key(rel)}")

    def close(self) -> None:
        """Nothing held: the client is the caller's."""

    def __enter__(self) -> ObjectDir:
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        self.close()

    # ---- entries -----------------------------------------------------------------------

    def exists(self, rel: str) -> bool:
        return bool(self.fs.exists(self._key(rel)))

    def is_dir(self, rel: str) -> bool:
        return bool(self.fs.isdir(self._key(rel)))

    def size(self, rel: str) -> int:
        return int(self.fs.info(self._key(rel))["size"])

    def stat(self, rel: str) -> tuple[int, int]:
        """(size, mtime in ns) of the object ``rel``: the hash cache's identity of a file, as a
        local file's size and mtime (an object is never rewritten in place by Spark either)."""
        info = self.fs.info(self._key(rel))
        modified = info.get("LastModified") or info.get("mtime") or info.get("last_modified")
        mtime_ns = int(modified.timestamp() * 1_000_000_000) if modified is not None else 0
        return int(info["size"]), mtime_ns

    def object_key(self, rel: str = "") -> str:
        """The client's path (``bucket/prefix/rel``, no scheme) of ``rel``."""
        return self._key(rel)

    def names(self, rel: str = "") -> list[str]:
        """The names in the folder ``rel`` ("" this one); [] if there is nothing below it.
        A zero-byte folder marker (what Hadoop's S3A writes for a folder) is not a name."""
        key = self._key(rel)
        try:
            found = self.fs.ls(key, detail=False)
        except FileNotFoundError:
            return []
        below = (str(item).rstrip("/") for item in found)
        return sorted({item.rsplit("/", 1)[-1] for item in below if item != key})

    def walk(self, rel: str) -> Iterator[tuple[str, list[str], list[str]]]:
        """(relative folder, folder names, file names) for ``rel`` and every folder below."""
        folders: list[str] = []
        files: list[str] = []
        for name in self.names(rel):
            (folders if self.is_dir(f"{rel}/{name}" if rel else name) else files).append(name)
        yield rel, folders, files
        for name in folders:
            yield from self.walk(f"{rel}/{name}" if rel else name)

    # ---- files -------------------------------------------------------------------------

    def read(self, rel: str, limit: int = READ_LIMIT) -> bytes:
        """The bytes of ``rel``, at most ``limit`` of them (``TooLarge``)."""
        key = self._key(rel)
        size = int(self.fs.info(key)["size"])
        if size > limit:
            raise TooLarge(rel, size, limit)
        data = bytes(self.fs.cat_file(key, start=0, end=limit + 1))
        if len(data) > limit:  # it grew after the size was read
            raise TooLarge(rel, len(data), limit)
        return data

    def write_atomic(self, rel: str, data: bytes, mode: int = 0o644) -> None:
        """``rel`` replaced whole by ``data``: one PUT, which an object store makes visible
        whole or not at all (``mode``: a local file's; objects have none)."""
        self.fs.pipe_file(self._key(rel), bytes(data))

    def unlink(self, rel: str) -> None:
        """``rel`` removed if it is there."""
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self._key(rel))

    def rename(self, old: str, new: str) -> None:
        """A copy then a delete: for tidegate's own side files only (see the module)."""
        self.fs.mv(self._key(old), self._key(new))

    def remove_tree_below(self) -> None:
        """Every object below this folder removed."""
        for rel_dir, _folders, files in list(self.walk("")):
            for file in files:
                self.unlink(f"{rel_dir}/{file}" if rel_dir else file)

    def remove_tree(self, name: str) -> None:
        """Every object below ``name`` removed (nothing there: nothing done)."""
        if not _parts(name):
            raise ValueError("an ObjectDir does not remove itself")
        for rel_dir, _folders, files in list(self.walk(name)):
            for file in files:
                self.unlink(f"{rel_dir}/{file}")
