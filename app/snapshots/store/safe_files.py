"""Opening checkpoint files without following links.

Driver code writes the checkpoints, so it can plant a symbolic link (to ``/proc/self/environ``,
the admin token, another job's state) where a snapshot expects a state file, or swap a folder
for one between a check and a use. Every file a snapshot reads or writes is opened here, one
path component at a time relative to the checkpoint's held descriptor (``HeldDir``, reached
from the checkpoint root by ``app.core.paths.open_checkpoint``): a link anywhere below it, a
device, a FIFO or a socket is refused, naming only the relative path, never what it points to.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from app.snapshots.errors import UnsafeFileError
from tidegate_runtime.checkpoints.held_dir import HeldDir, UnsafeEntry
from tidegate_runtime.checkpoints.object_dir import ObjectDir

# A checkpoint folder: held open (the worker's way), or a path held for the call.
Folder = Path | HeldDir
# ... or a folder in object storage, where there is no link to refuse (``object_files``).
AnyFolder = Folder | ObjectDir


@contextlib.contextmanager
def held(base: Folder, *, create: bool = False) -> Iterator[HeldDir]:
    """``base`` held open for the block (a ``HeldDir`` as it is); a link or special file met
    below it raised as ``UnsafeFileError``."""
    try:
        if isinstance(base, HeldDir):
            yield base
        else:
            with HeldDir.at(base, create=create) as folder:
                yield folder
    except UnsafeEntry as exc:
        if isinstance(exc, UnsafeFileError):
            raise
        raise UnsafeFileError(exc.rel) from None


def open_regular(base: Folder, rel: str) -> int:
    """A read-only fd of the regular file ``base/rel``; ``UnsafeFileError`` for anything else."""
    with held(base) as folder:
        return folder.open_file(rel)


def create_regular(base: Folder, rel: str, mode: int = 0o644) -> int:
    """A write-only fd of ``base/rel``, created or truncated, with its directories made; a
    link on the way (or at the file) is refused, so a write never lands outside ``base``."""
    with held(base, create=True) as folder:
        return folder.create_file(rel, mode)


def link_regular(base: Folder, rel: str, source: str) -> bool:
    """Make ``base/rel`` a hard link to the file ``source``, with its directories made and no
    link followed on the way (as ``create_regular``). False where the filesystem cannot (another
    device, or no hard links): the caller copies instead."""
    with held(base, create=True) as folder, folder.parent_of(rel, create=True) as (parent, name):
        try:
            existing = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:  # a leftover of an interrupted restore is replaced; a link or a folder is not
            if not stat.S_ISREG(existing.st_mode):
                raise UnsafeFileError(rel)
            os.unlink(name, dir_fd=parent)
        try:
            os.link(source, name, dst_dir_fd=parent, follow_symlinks=False)
        except OSError as exc:
            if exc.errno in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                return False
            raise
        return True


def remove(base: Folder, rel: str) -> None:
    """``base/rel`` removed if there (a link removed, never followed)."""
    with held(base) as folder:
        folder.unlink(rel)


def link_fd(fd: int, path: str | Path) -> bool:
    """Hard-link the open file ``fd`` (the very inode read, whatever its name now points
    to) at ``path``; False where it cannot be: another device, a filesystem without hard
    links, a file the kernel will not let this user link (fs.protected_hardlinks)."""
    # linkat(AT_SYMLINK_FOLLOW) on /proc/self/fd/N links the inode behind the descriptor;
    # Python passes that flag only with a directory fd (an absolute path ignores it).
    root = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.link(f"/proc/self/fd/{fd}", path, src_dir_fd=root, follow_symlinks=True)
    except OSError:
        return False
    finally:
        os.close(root)
    return True


def copy_fd(src: int, dst: int) -> None:
    """Copy all of ``src`` (from its start) to ``dst``, in the kernel where it can."""
    offset = 0
    while True:
        try:
            sent = os.sendfile(dst, src, offset, 1 << 30)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOSYS):
                raise
            _copy_by_reads(src, dst, offset)
            return
        if sent == 0:
            return
        offset += sent


def _copy_by_reads(src: int, dst: int, offset: int) -> None:
    while chunk := os.pread(src, 4 * 1024 * 1024, offset):
        view = memoryview(chunk)
        while view:
            view = view[os.write(dst, view) :]
        offset += len(chunk)


def regular_size(base: AnyFolder, rel: str) -> int:
    if isinstance(base, ObjectDir):
        return base.size(rel)
    fd = open_regular(base, rel)
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)
