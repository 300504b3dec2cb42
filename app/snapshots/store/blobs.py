"""The snapshot store: content-addressed files under a root that is a path or any fsspec URL.

Layout::

    blobs/blake3/<hex[:2]>/<hex>     every distinct file once, by its BLAKE3 (``digests``)
    blobs/<hex[:2]>/<hex>            ... or by its SHA-256, as format 1 manifests named them
    manifests/<job>/<snapshot>.json  relative path -> content id + size, per query; written last
    tmp/                             uploads in flight (local roots), swept by gc

A snapshot exists once its manifest does; the manifest is written after every blob it names,
atomically (rename on a local root, a single PUT on object stores: S3 shows an object only
once its PUT, or a multipart upload's completion, succeeded; a failed multipart upload is
aborted, see ``app.snapshots.store.remote``). State files are immutable,
so the second snapshot of a job mostly references blobs the first one wrote: only new files
cost a write. ``gc`` deletes manifests no catalog row knows and then blobs no manifest names;
callers keep it from running while an export is in flight (see ``snapshots.service``).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable, Collection, Generator, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import fsspec

from app.core.paths import private_dir
from app.snapshots.errors import StoreError
from app.snapshots.store import digests
from app.snapshots.store.local_tree import FileKey
from app.snapshots.store.object_files import put_object
from app.snapshots.store.remote import is_local, open_remote
from app.snapshots.store.restoring import Restoring
from app.snapshots.store.safe_files import (
    AnyFolder,
    copy_fd,
    link_fd,
    open_regular,
)
from tidegate_runtime.checkpoints.held_dir import HeldDir
from tidegate_runtime.checkpoints.object_dir import ObjectDir

# Files put at once: two cores hash while the kernel copies (measured in bench/snapshots.py).
PUT_THREADS = 4
# 2: entries name BLAKE3 content (``{"blake3": hex}``) beside 1's SHA-256 (``{"sha256": hex}``).
MANIFEST_FORMAT = 2
_READABLE_FORMATS = (1, 2)


_T = TypeVar("_T")


@dataclass
class PutResult:
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    bytes_referenced: int = 0
    bytes_written: int = 0
    files_written: int = 0
    files_hashed: int = 0


@dataclass(frozen=True)
class _Put:
    """One file put: its manifest entry, and whether it was hashed and written."""

    entry: dict[str, Any]
    size: int
    hashed: bool
    wrote: bool


@dataclass
class GcResult:
    manifests_deleted: int = 0
    blobs_deleted: int = 0
    bytes_freed: int = 0


def _only_ours(fd: int) -> bool:
    """The open file is this process's user's and no one else may write it: only such a file
    becomes a blob by a link. A driver running as another user keeps its files; their blobs
    are copies, read-only to it (what SNAPSHOT_RESTORE_LINKS relies on)."""
    st = os.fstat(fd)
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022


class SnapshotStore(Restoring):
    def __init__(
        self,
        url: str,
        options: Mapping[str, Any] | None = None,
        *,
        link_exports: bool = False,
        restore_links: bool = False,
    ) -> None:
        """``url``: a path or fsspec URL; ``options``: the remote filesystem's (credentials,
        endpoint, timeouts; ignored for a local root). ``link_exports``
        (TIDEGATE_SNAPSHOT_EXPORT_LINKS): a new blob on a local root is a hard link to the
        checkpoint file it was hashed from, where the kernel allows one, not a copy.
        ``restore_links`` (TIDEGATE_SNAPSHOT_RESTORE_LINKS): restores link checkpoint files to
        blobs, so a blob written is readable by all (drivers of another OS user read it through
        the link; the store's folders stay private); otherwise by the worker's user alone."""
        self.url = url
        self.blob_mode = 0o444 if restore_links else 0o400
        self.local = is_local(url)
        self.link_exports = link_exports and self.local
        self.fs: fsspec.AbstractFileSystem
        if self.local:
            self.fs, root = fsspec.core.url_to_fs(url)
            self.root = str(root).rstrip("/")
        else:
            self.fs, self.root = open_remote(url, options)
        self._made: set[Path] = set()
        # Files put or restored at once. An object store gets one request at a time: it fails
        # fast and exactly where it failed (tests/snapshots/test_s3_store.py); parallel
        # uploads there are not measured yet.
        self.threads = PUT_THREADS if self.local else 1

    def _each(self, work: Callable[[Any], _T], items: list[Any]) -> Generator[_T, None, None]:
        """``work(item)`` for each item, ``self.threads`` at a time, results in the items'
        order. On a failure (or a caller that stops reading), items not yet begun are not."""
        if self.threads == 1:
            # In the caller's thread: a pool's worker would begin the next item before the
            # caller saw the failure, and a hanging store would then hold the export for a
            # second full timeout.
            yield from map(work, items)
            return
        pool = ThreadPoolExecutor(self.threads, thread_name_prefix="snapshot-files")
        try:
            yield from pool.map(work, items)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _mkdir(self, path: Path) -> None:
        """A folder of a local store, made private (0700) if missing: the store holds every
        job's state. A root the admin made keeps its mode."""
        if path not in self._made:
            private_dir(path)
            self._made.add(path)

    # ---- paths ------------------------------------------------------------------------

    def blob_path(self, content: str) -> str:
        """The blob of a content id (``digests``); StoreError for anything that is not one."""
        return f"{self.root}/blobs/{digests.blob_rel(content)}"

    def manifest_path(self, job: str, name: str) -> str:
        return f"{self.root}/manifests/{job}/{name}.json"

    # ---- writing ----------------------------------------------------------------------

    def put_files(
        self,
        checkpoint: AnyFolder,
        files: Iterable[str],
        known: Mapping[FileKey, str] | None = None,
        on_file: Callable[[str, int], None] | None = None,
        in_store: Collection[str] = (),
    ) -> PutResult:
        """Store each file of ``checkpoint`` (relative paths) unless its content is already
        stored. ``known`` maps (path, size, mtime_ns) to a content id learned earlier, so files
        that did not change are neither reread nor rewritten; a known content is looked for in
        the store unless ``in_store`` names it (the caller knows its blob is there). ``on_file(rel,
        size)`` is called after each file is in the store (progress), in the order of ``files``.

        ``self.threads`` files at a time (PUT_THREADS on a local root): hashing (BLAKE3 lets
        go of the GIL) and copying (in the kernel) of one file overlap with another's, so a
        first export costs about what ``cp`` of the same files does instead of a hash pass
        plus a copy."""
        files = list(files)
        result = PutResult()
        known = known or {}
        puts = self._each(lambda rel: self._put_file(checkpoint, rel, known, in_store), files)
        with contextlib.closing(puts):  # on_file may raise (a cancelled operation): puts stop
            for rel, put in zip(files, puts, strict=True):
                result.entries[rel] = put.entry
                result.bytes_referenced += put.size
                result.files_hashed += put.hashed
                if put.wrote:
                    result.bytes_written += put.size
                    result.files_written += 1
                if on_file is not None:
                    on_file(rel, put.size)
        return result

    def _put_file(
        self,
        checkpoint: AnyFolder,
        rel: str,
        known: Mapping[FileKey, str],
        in_store: Collection[str],
    ) -> _Put:
        if isinstance(checkpoint, ObjectDir):  # in object storage: object_files
            return _Put(*put_object(self, checkpoint, rel, known, in_store))
        fd = open_regular(checkpoint, rel)  # never through a link the driver planted
        where = checkpoint.path if isinstance(checkpoint, HeldDir) else checkpoint
        try:
            st = os.fstat(fd)
            content = known.get((str(where / rel), st.st_size, st.st_mtime_ns))
            hashed = wrote = False
            if content is None or (
                content not in in_store and not self.fs.exists(self.blob_path(content))
            ):
                hashed = True
                content = digests.hash_fd(fd)
                wrote = self._put_blob(fd, content)
        finally:
            os.close(fd)
        entry = digests.entry(content, st.st_size, st.st_mtime_ns)
        return _Put(entry, st.st_size, hashed, wrote)

    def _put_blob(self, fd: int, content: str) -> bool:
        """Copy the open file hashed to ``content`` into the store unless it is there; whether it
        was written. On a local root the copy stays in the kernel (sendfile), as cp does;
        checkpoint files are never rewritten in place, so the hash read holds for the copy.
        With ``link_exports`` the blob is the hashed inode itself, linked: no byte copied
        (RocksDB's own checkpoints share SST files the same way); where no link can be made,
        a copy."""
        target = self.blob_path(content)
        if self.fs.exists(target):
            return False
        if self.local:
            tmp_dir = Path(self.root) / "tmp"
            self._mkdir(tmp_dir)
            tmp = tmp_dir / uuid.uuid4().hex
            try:
                if not (self.link_exports and _only_ours(fd) and link_fd(fd, tmp)):
                    # Read-only: a restore may link checkpoint files to it (RESTORE_LINKS).
                    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
                    out = os.open(tmp, flags, self.blob_mode)
                    try:
                        os.fchmod(out, self.blob_mode)  # what the umask took, given back
                        copy_fd(fd, out)
                    finally:
                        os.close(out)
                self._mkdir(Path(target).parent)
                try:
                    # Not a rename: two files of one content (commit logs often are), put at
                    # once here or by another worker, are written once.
                    os.link(tmp, target)
                except FileExistsError:
                    return False
                except OSError:  # a filesystem without hard links: the same content anyway
                    os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
        else:
            # One PUT, all or nothing on object stores, of the very file opened above.
            self.fs.put_file(f"/proc/self/fd/{fd}", target)
        return True

    def write_manifest(self, job: str, name: str, manifest: dict[str, Any]) -> str:
        data = json.dumps({"format": MANIFEST_FORMAT, **manifest}, sort_keys=True).encode()
        target = self.manifest_path(job, name)
        if self.local:
            final = Path(target)
            self._mkdir(final.parent)
            # A name no other writer has, even in another container sharing this store.
            tmp = final.with_name(f".{final.name}.{uuid.uuid4().hex}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            with open(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, final)  # the commit point
        else:
            self.fs.pipe_file(target, data)  # the commit point: one PUT, after every blob
            return str(self.fs.unstrip_protocol(target))
        return target

    # ---- reading ----------------------------------------------------------------------

    def read_manifest(self, job: str, name: str) -> dict[str, Any] | None:
        try:
            with self.fs.open(self.manifest_path(job, name), "rb") as f:
                doc: dict[str, Any] = json.loads(f.read())
        except FileNotFoundError:
            return None
        if doc.get("format") not in _READABLE_FORMATS:
            raise StoreError(f"manifest {job}/{name} has unknown format {doc.get('format')}")
        return doc

    # ---- garbage collection -----------------------------------------------------------

    def manifests(self) -> list[tuple[str, str]]:
        """(job, snapshot) of every manifest in the store."""
        base = f"{self.root}/manifests"
        if not self.fs.exists(base):
            return []
        out = []
        for path in self.fs.find(base):
            rel = str(path)[len(base) + 1 :]
            job, _, file = rel.partition("/")
            if file.endswith(".json") and "/" not in file and not file.startswith("."):
                out.append((job, file[: -len(".json")]))
        return sorted(out)

    def delete_manifest(self, job: str, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self.manifest_path(job, name))

    def gc(self, live: set[tuple[str, str]], *, tmp_grace_seconds: float = 3600.0) -> GcResult:
        """Delete manifests not in ``live``, then every blob no remaining manifest names."""
        result = GcResult()
        referenced: set[str] = set()
        for job, name in self.manifests():
            if (job, name) not in live:
                self.delete_manifest(job, name)
                result.manifests_deleted += 1
                continue
            doc = self.read_manifest(job, name) or {}
            for query in (doc.get("queries") or {}).values():
                files = (query.get("files") or {}).values()
                referenced.update(digests.blob_rel(digests.content_id(e)) for e in files)
        base = f"{self.root}/blobs"
        if self.fs.exists(base):
            for path, info in self.fs.find(base, detail=True).items():
                rel = str(path).removeprefix(f"{base}/")
                if rel != str(path) and rel not in referenced:  # only what it can name
                    self.fs.rm_file(path)
                    result.blobs_deleted += 1
                    result.bytes_freed += int(info.get("size") or 0)
        if self.local:
            tmp_dir = Path(self.root) / "tmp"
            if tmp_dir.is_dir():
                cutoff = time.time() - tmp_grace_seconds
                for tmp in tmp_dir.iterdir():
                    if tmp.stat().st_mtime < cutoff:
                        tmp.unlink(missing_ok=True)
        return result

    def total_blob_bytes(self) -> int:
        base = f"{self.root}/blobs"
        if not self.fs.exists(base):
            return 0
        return sum(int(i.get("size") or 0) for i in self.fs.find(base, detail=True).values())
