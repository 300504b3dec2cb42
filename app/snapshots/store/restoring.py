"""The restore side of the snapshot store: a snapshot's blobs put back as checkpoint files,
each copied with its hash checked (or hard-linked, where allowed), several at once on a local
store. A mixin of ``SnapshotStore`` (``blobs.py``), which holds the writing, reading and gc."""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Mapping
from typing import Any, Protocol, TypeVar

import fsspec

from app.snapshots.errors import StoreError
from app.snapshots.store import digests
from app.snapshots.store.local_tree import keep_present
from app.snapshots.store.object_files import restore_objects
from app.snapshots.store.safe_files import (
    AnyFolder,
    Folder,
    create_regular,
    held,
    link_regular,
    open_regular,
    remove,
)
from tidegate_runtime.checkpoints.object_dir import ObjectDir

CHUNK = 4 * 1024 * 1024


def _readable_by_all(blob: str) -> bool:
    """Whether a checkpoint file may be this blob, linked: only a blob all may read (written
    with restore links on). One written private (0400) is copied, or a driver of another OS
    user could not read its own checkpoint."""
    try:
        return os.stat(blob).st_mode & 0o444 == 0o444
    except FileNotFoundError:
        return True  # the link names it missing, as for any blob


_T = TypeVar("_T")


class _Store(Protocol):
    """What the restore needs of the store it is mixed into."""

    fs: fsspec.AbstractFileSystem
    local: bool

    def blob_path(self, content: str) -> str: ...

    def _each(self, work: Callable[[Any], _T], items: list[Any]) -> Generator[_T, None, None]: ...

    def _restore_file(
        self, dest: Folder, rel: str, entry: Mapping[str, Any], *, link: bool
    ) -> tuple[dict[str, Any], bool]: ...

    def copy_blob(self, content: str, target: int) -> None: ...


class Restoring:
    def restore(
        self: _Store,
        entries: Mapping[str, Mapping[str, Any]],
        dest: AnyFolder,
        *,
        link: bool = False,
        present: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Put each blob at ``dest/<relative path>``, copied and its hash checked. Returns
        the hints (path -> content id, size, mtime_ns) that let a later export skip rereading
        them.

        ``present`` (path -> content id): files a restore put in ``dest`` before (``prestage``).
        Each that the entries name with the same hash stays as it is; any other file in
        ``dest`` is removed, so ``dest`` ends holding exactly the entries.

        With ``link`` (TIDEGATE_SNAPSHOT_RESTORE_LINKS), from a local store on the
        checkpoints' filesystem, a file is a hard link to its blob instead: no byte is copied,
        so a restore takes as long for 1 GB as for 1 MB (issue 25), its size checked against
        the manifest. Nothing of tidegate's or Spark's writes a checkpoint file in place (Spark
        writes new files or renames over old ones), but driver code could: hence only where
        drivers cannot write the blobs (another OS user; blobs are read-only)."""
        if isinstance(dest, ObjectDir):  # no links there: object_files
            return restore_objects(self, entries, dest, present or {})
        hints: dict[str, Any] = {}
        with held(dest, create=True) as folder:  # every file below this one descriptor
            items = sorted(entries.items())
            if present:
                kept = keep_present(entries, folder, present)
                hints.update(kept)
                items = [(rel, entry) for rel, entry in items if rel not in kept]
            if link and self.local:
                for rel, entry in items:
                    # A filesystem that cannot link will not for the next file: copy from then.
                    hints[rel], link = self._restore_file(folder, rel, entry, link=link)
                return hints
            # Copies are checked by hash: several files at once, as put_files.
            done = self._each(lambda item: self._restore_file(folder, *item, link=False)[0], items)
            hints.update(zip((rel for rel, _ in items), done, strict=True))
        return hints

    def _restore_file(
        self: _Store, dest: Folder, rel: str, entry: Mapping[str, Any], *, link: bool
    ) -> tuple[dict[str, Any], bool]:
        """One file of a restore: its hint, and whether the next file may be linked (False once
        the filesystem refused a link)."""
        content = digests.content_id(entry)
        blob, linked = self.blob_path(content), False
        if link and _readable_by_all(blob):
            try:
                linked = link_regular(dest, rel, blob)
            except FileNotFoundError:
                raise StoreError(f"blob {content} is missing from the snapshot store") from None
            link = linked
        if linked:
            fd = open_regular(dest, rel)
        else:
            fd = create_regular(dest, rel)  # no link below dest, no '..' in rel
            try:
                self.copy_blob(content, fd)
            except BaseException:
                os.close(fd)
                remove(dest, rel)
                raise
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        if "size" in entry and st.st_size != int(entry["size"]):
            remove(dest, rel)
            raise StoreError(
                f"blob {content} is corrupt: {st.st_size} bytes, the manifest says {entry['size']}"
            )
        return digests.entry(content, st.st_size, st.st_mtime_ns), link

    def copy_blob(self: _Store, content: str, target: int) -> None:
        """Write the blob to the open file ``target``, checking its hash. Read into one
        buffer: the store's threads restoring at once allocate nothing per read."""
        digest = digests.hasher(content)
        buffer = bytearray(CHUNK)
        view = memoryview(buffer)
        try:
            with self.fs.open(self.blob_path(content), "rb") as src:
                while read := src.readinto(buffer):
                    out = view[:read]
                    digest.update(out)
                    while out:
                        out = out[os.write(target, out) :]
        except FileNotFoundError:
            raise StoreError(f"blob {content} is missing from the snapshot store") from None
        algorithm, expected = digests.parse(content)
        if digest.hexdigest() != expected:
            raise StoreError(
                f"blob {content} is corrupt (content hashes to {algorithm}:{digest.hexdigest()})"
            )
