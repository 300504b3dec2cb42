"""What a restore put in a checkpoint (relative path -> content id, size, mtime), so the next
export of that checkpoint need not reread those files.

Kept in the worker's private data folder, never in the checkpoint: a driver can write its
checkpoint, and hints it could write would let its snapshot name any blob of the store (another
job's state) without the export reading a byte (issue 51 M5). A worker without the file (the
restore ran on another machine) hashes the files again: slower, never wrong.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from app.core.config import Settings
from app.core.paths import private_dir
from app.snapshots.store.local_tree import FileKey, known_hashes
from tidegate_runtime.checkpoints.durable_files import write_atomic
from tidegate_runtime.checkpoints.held_dir import HeldDir, TooLarge
from tidegate_runtime.checkpoints.object_dir import UrlPath

# What restores of old releases left in a checkpoint; ignored when exporting: a driver wrote there.
LEGACY_FILE = ".tidegate-restored.json"
# Hints are a few hundred bytes a file; a checkpoint has at most some ten thousand files.
READ_LIMIT = 64 * 1024 * 1024


def _folder(settings: Settings) -> Path:
    return settings.data_dir.absolute() / "restored"


def path_for(settings: Settings, checkpoint: Path | UrlPath) -> Path:
    """The hints of ``checkpoint`` (named by its path's hash: any checkpoint location fits)."""
    digest = hashlib.sha256(str(checkpoint).encode()).hexdigest()
    return _folder(settings) / f"{digest}.json"


def save(settings: Settings, checkpoint: Path | UrlPath, hints: dict[str, Any]) -> None:
    private_dir(_folder(settings))
    write_atomic(path_for(settings, checkpoint), json.dumps(hints).encode())


def exists(settings: Settings, checkpoint: Path | UrlPath) -> bool:
    return path_for(settings, checkpoint).exists()


def forget(settings: Settings, checkpoint: Path | UrlPath) -> None:
    path_for(settings, checkpoint).unlink(missing_ok=True)


def known(settings: Settings, checkpoint: Path | UrlPath) -> dict[FileKey, str]:
    """Hash-cache entries for ``checkpoint`` from its restore, or none."""
    path = path_for(settings, checkpoint)
    try:
        with HeldDir.at(path.parent) as folder:
            hints = json.loads(folder.read(path.name, READ_LIMIT))
    except (OSError, TooLarge, ValueError):
        return {}
    if not isinstance(hints, dict):
        return {}
    try:
        return known_hashes(checkpoint, hints)
    except (KeyError, TypeError, ValueError):
        return {}
