"""The snapshot store and checkpoints in object storage (``ObjectDir``, ``s3a://…``): a file
exported is read once, hashed and its blob copied by the S3 server itself where the store is on
the same server (no byte written through tidegate), else uploaded from a private spool; a blob
restored is copied by the server where it can, else read, its hash checked, and put as one
object. An object store has no links, FIFOs or folders to swap, so what ``safe_files`` guards
against locally cannot happen here; sizes are checked against the manifest as locally.

Restoring into object storage cannot assemble beside the destination and rename (a rename there
is a copy per object): ``RESTORING`` marks a destination under construction instead. It is
written before the first file and removed after the last, so a destination without it is
complete, and one with it (a worker killed mid-restore) is emptied and restored again."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from typing import IO, Any

from app.snapshots.errors import StoreError
from app.snapshots.store import digests
from app.snapshots.store.local_tree import FileKey
from app.snapshots.store.safe_files import create_regular, open_regular
from tidegate_runtime.checkpoints.held_dir import HeldDir
from tidegate_runtime.checkpoints.object_dir import ObjectDir

# Written first into a query's checkpoint being restored in object storage, removed last.
RESTORING = ".tidegate-restoring"
CHUNK = 4 * 1024 * 1024


def _client(folder: ObjectDir) -> Any:
    """The folder's fsspec client in full (an ``ObjectDir`` types only what checkpoint code
    needs of it; the worker's is s3fs)."""
    return folder.fs


def _endpoint(fs: Any) -> Any:
    options = getattr(fs, "storage_options", None) or {}
    return options.get("endpoint_url") or (options.get("client_kwargs") or {}).get("endpoint_url")


def same_server(a: Any, b: Any) -> bool:
    """Whether two fsspec clients speak to the same S3 server (server-side copies between
    them may work; each copy falls back to reading and writing where it does not)."""
    return _is_s3(a) and _is_s3(b) and _endpoint(a) == _endpoint(b)


def _is_s3(fs: Any) -> bool:
    protocol = getattr(fs, "protocol", None) or ()
    names = (protocol,) if isinstance(protocol, str) else tuple(protocol)
    return hasattr(fs, "copy") and bool({"s3", "s3a"} & set(names))


def _server_copy(fs: Any, source: str, target: str) -> bool:
    """``source`` copied to ``target`` by the server (``fs``'s credentials read the one and
    write the other); False where the server refused it, so the caller copies through."""
    try:
        fs.copy(source, target)
    except (PermissionError, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        return False
    return True


def _read_hashed(checkpoint: ObjectDir, rel: str, size: int, spool: IO[bytes] | None) -> str:
    """The content id of the object ``rel``, streamed (into ``spool`` too, if given, flushed)."""
    digest = digests.new_hasher()
    read = 0
    with _client(checkpoint).open(checkpoint.object_key(rel), "rb") as src:
        while chunk := src.read(CHUNK):
            digest.update(chunk)
            read += len(chunk)
            if spool is not None:
                spool.write(chunk)
    if read != size:  # rewritten while read: Spark never does; driver code might
        raise StoreError(f"{rel} changed while it was read ({size} bytes, then {read})")
    if spool is not None:
        spool.flush()
    return digests.content(digest)


def put_object(
    store: Any,
    checkpoint: ObjectDir,
    rel: str,
    known: Mapping[FileKey, str],
    in_store: frozenset[str] | Any,
) -> tuple[dict[str, Any], int, bool, bool]:
    """One checkpoint object into the store ``store`` (a ``SnapshotStore``): its manifest
    entry, size, whether it was hashed and whether a blob was written."""
    size, mtime_ns = checkpoint.stat(rel)
    content = known.get((str(checkpoint.path / rel), size, mtime_ns))
    if content is not None and (content in in_store or store.fs.exists(store.blob_path(content))):
        return digests.entry(content, size, mtime_ns), size, False, False
    server_side = not store.local and same_server(store.fs, checkpoint.fs)
    with tempfile.TemporaryFile() as spool:
        if not server_side:
            content = _read_hashed(checkpoint, rel, size, spool)
            wrote = store._put_blob(spool.fileno(), content)  # False where it is stored
        else:
            content = _read_hashed(checkpoint, rel, size, None)
            target = store.blob_path(content)
            if store.fs.exists(target):
                wrote = False
            elif _server_copy(store.fs, checkpoint.object_key(rel), target):
                wrote = True
            else:  # the server would not: through tidegate after all, read and checked again
                if _read_hashed(checkpoint, rel, size, spool) != content:
                    raise StoreError(f"{rel} changed while it was read")
                wrote = store._put_blob(spool.fileno(), content)
    return digests.entry(content, size, mtime_ns), size, True, wrote


def restore_objects(
    store: Any,
    entries: Mapping[str, Mapping[str, Any]],
    dest: ObjectDir,
    present: Mapping[str, str],
) -> dict[str, Any]:
    """Each blob put at ``dest/<relative path>`` as an object; the hints (path -> content, size,
    mtime) a later export of ``dest`` skips rereading them by. ``present`` (path -> content id):
    objects a ``prestage`` put there; each the entries name with that content and size stays,
    every other object but the marker is removed, so ``dest`` ends holding exactly the
    entries. The caller marks ``dest`` as under construction around this (``RESTORING``)."""
    hints: dict[str, Any] = {}
    if present:
        hints.update(_keep_present(entries, dest, present))
    server_side = not store.local and same_server(store.fs, dest.fs)
    for rel, entry in sorted(entries.items()):
        if rel in hints:
            continue
        content = digests.content_id(entry)
        blob, key = store.blob_path(content), dest.object_key(rel)
        if not (server_side and _server_copy(store.fs, blob, key)):
            with tempfile.TemporaryFile() as spool:
                try:
                    store.copy_blob(content, spool.fileno())  # its hash checked on the way
                except FileNotFoundError:
                    raise StoreError(f"blob {content} is missing from the snapshot store") from None
                spool.flush()
                _client(dest).put_file(f"/proc/self/fd/{spool.fileno()}", key)
        size, mtime_ns = dest.stat(rel)
        if "size" in entry and size != int(entry["size"]):  # a server-side copy is unchecked
            dest.unlink(rel)
            raise StoreError(
                f"blob {content} is corrupt: {size} bytes, the manifest says {entry['size']}"
            )
        hints[rel] = digests.entry(content, size, mtime_ns)
    return hints


def _keep_present(
    entries: Mapping[str, Mapping[str, Any]], dest: ObjectDir, present: Mapping[str, str]
) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for rel_dir, _folders, names in list(dest.walk("")):
        for name in names:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if rel == RESTORING:
                continue
            entry = entries.get(rel)
            if entry is not None and present.get(rel) == digests.content_id(entry):
                size, mtime_ns = dest.stat(rel)
                if size == int(entry.get("size", size)):
                    kept[rel] = digests.entry(digests.content_id(entry), size, mtime_ns)
                    continue
            dest.unlink(rel)
    return kept


def copy_between(src: HeldDir | ObjectDir, files: list[str], dest: HeldDir | ObjectDir) -> None:
    """Plain copies of ``files`` from one checkpoint to another where either is in object
    storage (resume from a run's coordinates; a dry run's local scratch copy of one)."""
    for rel in files:
        if isinstance(src, ObjectDir) and isinstance(dest, ObjectDir):
            if same_server(src.fs, dest.fs) and _server_copy(
                src.fs, src.object_key(rel), dest.object_key(rel)
            ):
                continue
            with tempfile.TemporaryFile() as spool:  # streamed, never whole in memory
                with _client(src).open(src.object_key(rel), "rb") as f:
                    shutil.copyfileobj(f, spool, CHUNK)
                spool.flush()
                _client(dest).put_file(f"/proc/self/fd/{spool.fileno()}", dest.object_key(rel))
        elif isinstance(src, ObjectDir):
            assert isinstance(dest, HeldDir)
            target = create_regular(dest, rel)
            try:
                with _client(src).open(src.object_key(rel), "rb") as f:
                    while chunk := f.read(CHUNK):
                        view = memoryview(chunk)
                        while view:
                            view = view[os.write(target, view) :]
            finally:
                os.close(target)
        else:
            assert isinstance(dest, ObjectDir)
            source = open_regular(src, rel)  # never through a link
            try:
                _client(dest).put_file(f"/proc/self/fd/{source}", dest.object_key(rel))
            finally:
                os.close(source)
