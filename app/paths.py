"""Keep checkpoint and snapshot paths inside their configured roots."""

from __future__ import annotations

import os
from pathlib import Path


class PathOutsideRoot(ValueError):
    pass


def confine(candidate: str, root: Path) -> Path:
    """Resolve ``candidate`` (absolute, or relative to root; ``file:`` allowed) and refuse it
    unless it stays under ``root`` after following symlinks. ``..`` is refused outright."""
    raw = candidate[len("file:") :] if candidate.startswith("file:") else candidate
    raw = raw.lstrip("/") if candidate.startswith("file://") else raw
    if candidate.startswith("file://"):
        raw = "/" + raw
    if "\x00" in raw or any(part == ".." for part in Path(raw).parts):
        raise PathOutsideRoot(f"'{candidate}' contains '..' or a NUL byte")
    path = Path(raw) if os.path.isabs(raw) else root / raw
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))  # follows every symlink that exists today
    if real != real_root and real_root not in real.parents:
        raise PathOutsideRoot(f"'{candidate}' is not under the checkpoint root {root}")
    return real
