"""A local checkpoint tree as the snapshot store reads and writes it, apart from the blobs:
the cache that lets an export skip hashing a file a restore wrote, a restore's destination
trimmed to what it keeps, and plain copies from one checkpoint to another. Every path is
opened below its folder's descriptor, never through a link (``safe_files``)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from app.snapshots.store import digests
from app.snapshots.store.safe_files import Folder, copy_fd, create_regular, open_regular
from tidegate_runtime.checkpoints.held_dir import HeldDir
from tidegate_runtime.checkpoints.object_dir import UrlPath

# A file's identity for the hash cache: same path, size and mtime means the same content
# (state files are never rewritten in place).
FileKey = tuple[str, int, int]


def keep_present(
    entries: Mapping[str, Mapping[str, Any]], dest: HeldDir, present: Mapping[str, str]
) -> dict[str, Any]:
    """The hints of the files in ``dest`` that ``entries`` name with the content ``present``
    says they have, and of the size they name; every other file below ``dest`` removed.
    Walked and removed through directory descriptors, never through a link."""
    kept: dict[str, Any] = {}
    for top, dirs, names, dir_fd in os.fwalk(".", dir_fd=dest.fd, follow_symlinks=False):
        base = Path(top)
        for name in list(dirs):  # a link to a folder is listed as one: removed
            if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                os.unlink(name, dir_fd=dir_fd)
                dirs.remove(name)
        for name in names:
            rel = (base / name).as_posix()
            entry = entries.get(rel)
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if (
                entry is not None
                and present.get(rel) == digests.content_id(entry)
                and stat.S_ISREG(st.st_mode)
                and st.st_size == int(entry.get("size", st.st_size))
            ):
                kept[rel] = digests.entry(digests.content_id(entry), st.st_size, st.st_mtime_ns)
            else:
                os.unlink(name, dir_fd=dir_fd)
    return kept


def known_hashes(
    checkpoint: Path | UrlPath, files: Mapping[str, Mapping[str, Any]]
) -> dict[FileKey, str]:
    """Hash-cache entries for files of ``checkpoint`` as a manifest or restore hints list
    them (path -> content, size, mtime_ns)."""
    out: dict[FileKey, str] = {}
    for rel, entry in files.items():
        if "mtime_ns" in entry:
            key = (str(checkpoint / rel), int(entry["size"]), int(entry["mtime_ns"]))
            out[key] = digests.content_id(entry)
    return out


def copy_tree_files(src: Folder, files: Iterable[str], dest: Folder) -> None:
    """Plain copy of ``files`` from one checkpoint to another (resume from run coordinates)."""
    if not isinstance(dest, HeldDir):
        dest.mkdir(parents=True, exist_ok=True)
    for rel in files:
        source = open_regular(src, rel)
        try:
            target = create_regular(dest, rel)
            try:
                copy_fd(source, target)
            finally:
                os.close(target)
        finally:
            os.close(source)
