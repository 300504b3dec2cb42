"""Opening checkpoint files without following links.

Driver code writes the checkpoints, so it can plant a symbolic link (to ``/proc/self/environ``,
the admin token, another job's state) where a snapshot expects a state file. Every file a
snapshot reads or writes is opened here, one path component at a time relative to the
checkpoint (``openat`` with ``O_NOFOLLOW``): a link anywhere below the checkpoint, a device,
a FIFO or a socket is refused, naming only the relative path, never what it points to.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from app.snapshots.errors import UnsafeFileError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _parts(rel: str) -> list[str]:
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise UnsafeFileError(rel)
    return parts


def _open_dir(name: str | Path, rel: str, dir_fd: int | None = None) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafeFileError(rel) from None
        raise


def _walk_to_parent(base: Path, rel: str, *, create: bool) -> tuple[int, str]:
    """An fd of the directory holding ``rel`` (below ``base``, no link on the way) and the
    file's name in it."""
    parts = _parts(rel)
    fd = _open_dir(base, ".")
    try:
        for i, part in enumerate(parts[:-1]):
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            child = _open_dir(part, "/".join(parts[: i + 1]), dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


@contextlib.contextmanager
def _at_file(base: Path, rel: str, *, create: bool) -> Iterator[tuple[int, str]]:
    """The directory holding ``base/rel`` (reached with no link on the way) and the file's name
    in it, closed after; a link at the file itself (``O_NOFOLLOW``'s ``ELOOP``) is refused."""
    parent, name = _walk_to_parent(base, rel, create=create)
    try:
        yield parent, name
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFileError(rel) from None
        raise
    finally:
        os.close(parent)


def open_regular(base: Path, rel: str) -> int:
    """A read-only fd of the regular file ``base/rel``; ``UnsafeFileError`` for anything else."""
    with _at_file(base, rel, create=False) as (parent, name):
        # O_NONBLOCK: opening a FIFO must not hang until a writer shows up.
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(name, flags, dir_fd=parent)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafeFileError(rel)
    os.set_blocking(fd, True)
    return fd


def create_regular(base: Path, rel: str) -> int:
    """A write-only fd of ``base/rel``, created or truncated, with its directories made; a
    link on the way (or at the file) is refused, so a write never lands outside ``base``."""
    with _at_file(base, rel, create=True) as (parent, name):
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        return os.open(name, flags, 0o644, dir_fd=parent)


def link_regular(base: Path, rel: str, source: str) -> bool:
    """Make ``base/rel`` a hard link to the file ``source``, with its directories made and no
    link followed on the way (as ``create_regular``). False where the filesystem cannot (another
    device, or no hard links): the caller copies instead."""
    parent, name = _walk_to_parent(base, rel, create=True)
    try:
        try:
            existing = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:  # a leftover of an interrupted restore is replaced; a link or a folder is not
            if not stat.S_ISREG(existing.st_mode):
                raise UnsafeFileError(rel)
            os.unlink(name, dir_fd=parent)
        os.link(source, name, dst_dir_fd=parent, follow_symlinks=False)
        return True
    except OSError as exc:
        if exc.errno in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP):
            return False
        raise
    finally:
        os.close(parent)


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


def regular_size(base: Path, rel: str) -> int:
    fd = open_regular(base, rel)
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)
