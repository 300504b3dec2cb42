"""Durable local writes shared by the event log and the checkpoint rewrites."""

from __future__ import annotations

import os
import threading
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """Make a rename or a new entry in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Write-then-rename, so readers see either the old or the new file, never a mix; the
    temporary name is unique per process and thread, so concurrent writers never collide."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)
