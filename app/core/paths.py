"""Keep checkpoint and snapshot paths inside their configured roots."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tidegate_runtime.held_dir import HeldDir, UnsafeEntry

# Dry runs' scratch copies, below the checkpoint root: a folder per job, then per operation
# attempt or spare (app/worker/dry_run/scratch_copy.py makes and removes them).
SCRATCH_DIR = ".tidegate-dryrun"


class PathOutsideRoot(ValueError):
    pass


def scratch_dir(checkpoint_root: Path, job: str, op_id: int, attempt: int = 1) -> Path:
    """Where an operation's dry run (its ``attempt``) works on a scratch copy."""
    name = str(op_id) + (f"-{attempt}" if attempt > 1 else "")
    return checkpoint_root / SCRATCH_DIR / job / name


def spare_scratch_dir(checkpoint_root: Path, job: str, spare_tag: str) -> Path:
    """Where a spare dry-runs (app/worker/reconcile/spare.py): one folder per spare."""
    return checkpoint_root / SCRATCH_DIR / job / spare_tag


_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):/")


def confine(candidate: str, root: Path) -> Path:
    """Resolve ``candidate`` (absolute, or relative to root; ``file:`` allowed) and refuse it
    unless it lies strictly below ``root`` after following symlinks (``root`` itself is
    refused: it holds other things' folders). ``..`` is refused outright, and so is a URL of
    another scheme (``s3a://…`` read as a relative path would be a local folder named so)."""
    scheme = _URL_SCHEME.match(candidate)
    if scheme and scheme.group(1).lower() != "file":
        raise PathOutsideRoot(
            f"'{candidate}' is a {scheme.group(1)}: URL; checkpoints live on a filesystem the "
            "worker mounts (below the checkpoint root): object storage is not supported yet"
        )
    raw = candidate[len("file:") :] if candidate.startswith("file:") else candidate
    raw = raw.lstrip("/") if candidate.startswith("file://") else raw
    if candidate.startswith("file://"):
        raw = "/" + raw
    if "\x00" in raw or any(part == ".." for part in Path(raw).parts):
        raise PathOutsideRoot(f"'{candidate}' contains '..' or a NUL byte")
    path = Path(raw) if os.path.isabs(raw) else root / raw
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))  # follows every symlink that exists today
    if real_root not in real.parents:
        raise PathOutsideRoot(f"'{candidate}' is not inside {root}")
    return real


def job_checkpoint_root(checkpoint_root: Path, job: str) -> Path:
    """A job's own folder under the checkpoint root: every checkpoint of the job lies in it,
    so no job (and no client string) reaches another job's checkpoints."""
    return checkpoint_root / job


def confine_checkpoint(candidate: str, checkpoint_root: Path, job: str) -> Path:
    """A query's checkpoint location: strictly inside ``checkpoint_root/<job>``; a relative
    path is relative to that folder."""
    return confine(candidate, job_checkpoint_root(checkpoint_root, job))


def checkpoint_path(root: Path, job: str, run_id: int, query: dict[str, Any]) -> Path:
    """Where a run's query keeps its checkpoint: the version's ``checkpoint_location``, else
    ``${checkpoint_root}/${job}/${run}/${query}`` (as the worker passes it to the runtime).
    Always derived here, never taken from a client: it is confined to the job's folder."""
    if query.get("checkpoint_location"):
        return confine_checkpoint(str(query["checkpoint_location"]), root, job)
    return job_checkpoint_root(root, job) / str(run_id) / str(query["name"])


def within_any(candidate: str, roots: list[Path]) -> bool:
    """Whether ``candidate`` (symlinks followed) is one of ``roots`` or lies below one."""
    if "\x00" in candidate:
        return False
    real = Path(os.path.realpath(candidate))
    for root in roots:
        real_root = Path(os.path.realpath(root))
        if real == real_root or real_root in real.parents:
            return True
    return False


def private_dir(path: Path) -> Path:
    """``path`` (and missing parents) as a folder only its owner can enter: data, logs and
    batch records hold tokens' neighbours, state and driver output. Only the folders made
    here are made private: one that exists is the admin's and keeps its mode (issue 51 M6:
    a log file in /tmp made /tmp 0700, and another user's PostgreSQL beside it crashed)."""
    missing: list[Path] = []
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile by another process: not ours to change
            continue
        folder.chmod(0o700)  # the umask may have taken bits mkdir's mode asked for
    return path


def private_file(path: Path) -> Path:
    """``path`` created if missing, readable and writable by its owner only (a log file
    others could read would show what its process logs); a file that exists keeps its mode."""
    private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return path


def open_checkpoint(root: Path, path: Path, *, create: bool = False) -> HeldDir:
    """The folder ``path`` held open, reached from ``root`` one component at a time without
    following a link (missing folders made with ``create``). Driver code writes under the
    checkpoint root, so it could swap ``<job>/<run>`` for a link to another job's run at any
    moment: what the worker reads and writes is then opened relative to the folder held here,
    never by its path again (issue 51 M4; ``tidegate_runtime/held_dir.py``). Names the
    relative path only, never where a link points. ``root`` itself is the admin's."""
    try:
        path.relative_to(root)
    except ValueError:  # not under the root (a fixed location, confined when it was accepted)
        return HeldDir.at(path, create=create)
    try:
        return HeldDir.below(root, path, create=create)
    except UnsafeEntry as exc:
        raise PathOutsideRoot(
            f"'{exc.rel}' under the checkpoint root is a symbolic link or not a folder: "
            "checkpoints are read and written through real folders only. Remove the link."
        ) from None


@contextlib.contextmanager
def read_checkpoint(root: Path, path: Path) -> Iterator[HeldDir | None]:
    """A query's checkpoint held open for reading (``open_checkpoint``), or None where there is
    none yet; ``PathOutsideRoot`` where a folder on the way is a link. Every reader of a
    checkpoint in the API and the worker goes through here or ``open_checkpoint``."""
    try:
        folder = open_checkpoint(root, path)
    except (FileNotFoundError, NotADirectoryError):
        yield None
        return
    with folder:
        yield folder
