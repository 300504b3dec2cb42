"""Keep checkpoint and snapshot paths inside their configured roots."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, overload

from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.checkpoints.checkpoint import Tree
from tidegate_runtime.checkpoints.held_dir import HeldDir, UnsafeEntry
from tidegate_runtime.checkpoints.object_dir import ObjectDir, UrlPath, split_url

# Where checkpoints live: a folder, or a prefix in an object store (``s3a://bucket/prefix``).
CheckpointRoot = Path | UrlPath

# Dry runs' scratch copies, below the checkpoint root: a folder per job, then per operation
# attempt or spare (app/worker/dry_run/scratch_copy.py makes and removes them).
SCRATCH_DIR = ".tidegate-dryrun"


class PathOutsideRoot(ValueError):
    pass


def scratch_dir(local_root: Path, job: str, op_id: int, attempt: int = 1) -> Path:
    """Where an operation's dry run (its ``attempt``) works on a scratch copy."""
    name = str(op_id) + (f"-{attempt}" if attempt > 1 else "")
    return local_root / SCRATCH_DIR / job / name


def spare_scratch_dir(local_root: Path, job: str, spare_tag: str) -> Path:
    """Where a spare dry-runs (app/worker/reconcile/spare.py): one folder per spare."""
    return local_root / SCRATCH_DIR / job / spare_tag


_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):/")


def confine(candidate: str, root: Path) -> Path:
    """Resolve ``candidate`` (absolute, or relative to root; ``file:`` allowed) and refuse it
    unless it lies strictly below ``root`` after following symlinks (``root`` itself is
    refused: it holds other things' folders). ``..`` is refused outright, and so is a URL of
    another scheme (``s3a://…`` read as a relative path would be a local folder named so)."""
    scheme = _URL_SCHEME.match(candidate)
    if scheme and scheme.group(1).lower() != "file":
        raise PathOutsideRoot(
            f"'{candidate}' is a {scheme.group(1)}: URL, but the checkpoint root is the folder "
            f"{root}; checkpoints in object storage need TIDEGATE_CHECKPOINT_ROOT set to an "
            "s3a://bucket/prefix URL"
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


def confine_key(candidate: str, root: UrlPath) -> UrlPath:
    """``candidate`` (a URL of ``root``'s scheme, or a key relative to ``root``) strictly
    below ``root`` (an object store folder's URL): same scheme, same bucket and prefix, no
    ``..``, ``.`` or empty name on the way. Names no more than the candidate and the root."""
    root_scheme, root_key = split_url(root)
    if "\x00" in candidate:
        raise PathOutsideRoot(f"'{candidate}' contains a NUL byte")
    scheme = _URL_SCHEME.match(candidate)
    if scheme:
        if "://" not in candidate or scheme.group(1).lower() != root_scheme:
            raise PathOutsideRoot(
                f"'{candidate}' is not a {root_scheme}:// URL: the checkpoint root "
                f"(TIDEGATE_CHECKPOINT_ROOT) is {root}"
            )
        key = candidate.split("://", 1)[1]
    elif candidate.startswith("/"):
        raise PathOutsideRoot(
            f"'{candidate}' is a local path: the checkpoint root (TIDEGATE_CHECKPOINT_ROOT) is "
            f"{root}, in object storage"
        )
    else:
        key = f"{root_key}/{candidate}"
    parts = key.rstrip("/").split("/")
    if any(part in ("..", ".", "") for part in parts):
        raise PathOutsideRoot(f"'{candidate}' contains '..', '.' or an empty name")
    if parts[: len(root_key.split("/"))] != root_key.split("/") or len(parts) <= len(
        root_key.split("/")
    ):
        raise PathOutsideRoot(f"'{candidate}' is not inside {root}")
    return UrlPath(f"{root_scheme}://{'/'.join(parts)}")


@overload
def job_checkpoint_root(checkpoint_root: Path, job: str) -> Path: ...
@overload
def job_checkpoint_root(checkpoint_root: UrlPath, job: str) -> UrlPath: ...
@overload
def job_checkpoint_root(checkpoint_root: CheckpointRoot, job: str) -> CheckpointRoot: ...
def job_checkpoint_root(checkpoint_root: CheckpointRoot, job: str) -> CheckpointRoot:
    """A job's own folder under the checkpoint root: every checkpoint of the job lies in it,
    so no job (and no client string) reaches another job's checkpoints."""
    return checkpoint_root / job


@overload
def confine_checkpoint(candidate: str, checkpoint_root: Path, job: str) -> Path: ...
@overload
def confine_checkpoint(candidate: str, checkpoint_root: UrlPath, job: str) -> UrlPath: ...
@overload
def confine_checkpoint(
    candidate: str, checkpoint_root: CheckpointRoot, job: str
) -> CheckpointRoot: ...
def confine_checkpoint(candidate: str, checkpoint_root: CheckpointRoot, job: str) -> CheckpointRoot:
    """A query's checkpoint location: strictly inside ``checkpoint_root/<job>``; a relative
    path is relative to that folder."""
    if isinstance(checkpoint_root, UrlPath):
        return confine_key(candidate, job_checkpoint_root(checkpoint_root, job))
    return confine(candidate, job_checkpoint_root(checkpoint_root, job))


@overload
def checkpoint_path(root: Path, job: str, run_id: int, query: dict[str, Any]) -> Path: ...
@overload
def checkpoint_path(root: UrlPath, job: str, run_id: int, query: dict[str, Any]) -> UrlPath: ...
@overload
def checkpoint_path(
    root: CheckpointRoot, job: str, run_id: int, query: dict[str, Any]
) -> CheckpointRoot: ...
def checkpoint_path(
    root: CheckpointRoot, job: str, run_id: int, query: dict[str, Any]
) -> CheckpointRoot:
    """Where a run's query keeps its checkpoint: the version's ``checkpoint_location``, else
    ``${checkpoint_root}/${job}/${run}/${query}`` (as the worker passes it to the runtime).
    Always derived here, never taken from a client: it is confined to the job's folder."""
    if query.get("checkpoint_location"):
        return confine_checkpoint(str(query["checkpoint_location"]), root, job)
    return job_checkpoint_root(root, job) / str(run_id) / str(query["name"])


def checkpoint_location(text: str) -> CheckpointRoot:
    """A checkpoint's location as a record keeps it (a manifest, a plan): a URL stays one
    (``Path`` would fold its ``//``), anything else is a path."""
    return UrlPath(text) if cp.is_object_store(text) else Path(text)


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


@overload
def open_checkpoint(root: Path, path: Path, *, create: bool = False) -> HeldDir: ...
@overload
def open_checkpoint(root: UrlPath, path: UrlPath, *, create: bool = False) -> ObjectDir: ...
@overload
def open_checkpoint(
    root: CheckpointRoot, path: CheckpointRoot, *, create: bool = False
) -> Tree: ...
def open_checkpoint(root: CheckpointRoot, path: CheckpointRoot, *, create: bool = False) -> Tree:
    """In an object store (a URL root): the folder ``path`` through the client registered for
    its scheme (``app/core/checkpoint_store.py``), confined below ``root``; its absence is
    ``FileNotFoundError`` as locally (``create``: nothing to make, objects make their folders).
    Locally: the folder ``path`` held open, reached from ``root`` one component at a time without
    following a link (missing folders made with ``create``). Driver code writes under the
    checkpoint root, so it could swap ``<job>/<run>`` for a link to another job's run at any
    moment: what the worker reads and writes is then opened relative to the folder held here,
    never by its path again (issue 51 M4; ``tidegate_runtime/checkpoints/held_dir.py``). Names the
    relative path only, never where a link points. ``root`` itself is the admin's."""
    if isinstance(root, UrlPath) or isinstance(path, UrlPath):
        return _open_object(root, path, create=create)
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


def _open_object(root: CheckpointRoot, path: CheckpointRoot, *, create: bool) -> ObjectDir:
    if not isinstance(root, UrlPath) or not isinstance(path, UrlPath):
        raise PathOutsideRoot(f"'{path}' and the checkpoint root {root} are not both URLs")
    url = confine_key(str(path), root)
    try:
        folder = cp.open_store(url)
    except cp.CheckpointError as exc:
        raise PathOutsideRoot(str(exc)) from None
    if not create and not folder.names():
        raise FileNotFoundError(f"no checkpoint at {url}")
    return folder


@overload
def read_checkpoint(
    root: Path, path: Path
) -> contextlib.AbstractContextManager[HeldDir | None]: ...
@overload
def read_checkpoint(
    root: UrlPath, path: UrlPath
) -> contextlib.AbstractContextManager[ObjectDir | None]: ...
@overload
def read_checkpoint(
    root: CheckpointRoot, path: CheckpointRoot
) -> contextlib.AbstractContextManager[Tree | None]: ...
def read_checkpoint(
    root: CheckpointRoot, path: CheckpointRoot
) -> contextlib.AbstractContextManager[Tree | None]:
    return _read_checkpoint(root, path)


@contextlib.contextmanager
def _read_checkpoint(root: CheckpointRoot, path: CheckpointRoot) -> Iterator[Tree | None]:
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
