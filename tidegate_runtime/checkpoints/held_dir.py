"""A folder opened once and read below its descriptor, never through a link (stdlib only).

Driver code writes checkpoints, so between a check and a use it can swap any folder on the
way for a symbolic link to another job's (issue 51 M4), or plant a link, a FIFO or a huge file
where a log file is expected (M5). A ``HeldDir`` is reached one component at a time with
``O_NOFOLLOW | O_DIRECTORY``, and every name below it is then opened relative to its
descriptor the same way: what is read is below what was reached, whatever the names point to
later. Files are read only if regular (opening a FIFO never blocks) and only up to a size cap.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO must not hang until a writer shows up.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# Folders made in a checkpoint: its driver, perhaps another OS user, reads them (as Spark's own,
# under the umask).
DIR_MODE = 0o755
# The most a metadata file (a log entry, a verdict, a schema) is read into memory.
READ_LIMIT = 16 * 1024 * 1024


class UnsafeEntry(OSError):
    """An entry that is not a plain file or folder where one is expected (a symbolic link, a
    device, a FIFO), or a name that leaves the folder. Names the relative path only, never
    what a link points to."""

    def __init__(self, rel: str) -> None:
        super().__init__(
            f"'{rel}' in the checkpoint is not a regular file (a symbolic link, device or "
            "other special file): snapshots copy regular files only. Remove it from the "
            "checkpoint and retry."
        )
        self.rel = rel


class TooLarge(OSError):
    """A metadata file over its read limit: never read into memory."""

    def __init__(self, rel: str, size: int, limit: int) -> None:
        super().__init__(f"'{rel}' is {size} bytes, over the {limit} bytes a metadata file may be")
        self.rel = rel


def _parts(rel: str) -> list[str]:
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise UnsafeEntry(rel)
    return parts


def _open_dir(name: str | Path, rel: str, dir_fd: int | None, *, create: bool) -> int:
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, DIR_MODE, dir_fd=dir_fd)
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafeEntry(rel) from None
        raise


class HeldDir:
    """An open folder; ``path`` is where it was reached (for messages and cache keys only:
    nothing is opened by it again)."""

    checksums = True  # Spark's local file system writes a .crc beside each file; so do we

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path

    # ---- reaching one -----------------------------------------------------------------

    @classmethod
    def at(cls, path: str | os.PathLike[str], *, create: bool = False) -> HeldDir:
        """``path`` itself, as the caller names it (links in it followed: the caller's)."""
        path = Path(path)
        if create:
            path.mkdir(parents=True, exist_ok=True)
        return cls(os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), path)

    @classmethod
    def below(cls, root: Path, path: Path, *, create: bool = False) -> HeldDir:
        """``path``, a folder at or below ``root`` (the admin's: links in it followed), reached
        from ``root`` with no link followed below it; its missing folders made 0700 with
        ``create``. ``UnsafeEntry`` names the first component that is a link."""
        rel = path.relative_to(root).as_posix()
        with cls.at(root, create=create) as top:
            return top if rel == "." else top.child(rel, create=create)

    def child(self, rel: str, *, create: bool = False) -> HeldDir:
        """The folder ``rel`` below this one, reached with no link followed."""
        parts = _parts(rel)
        fd = os.dup(self.fd)
        try:
            for i, part in enumerate(parts):
                child = _open_dir(part, "/".join(parts[: i + 1]), fd, create=create)
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return HeldDir(fd, self.path / rel)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> HeldDir:
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        self.close()

    # ---- entries ----------------------------------------------------------------------

    @contextlib.contextmanager
    def parent_of(self, rel: str, *, create: bool = False) -> Iterator[tuple[int, str]]:
        """The descriptor of the folder holding ``rel`` (reached with no link on the way) and
        the entry's name in it, closed after; a link at the entry itself (``O_NOFOLLOW``'s
        ``ELOOP``) is refused."""
        parts = _parts(rel)
        folder = self.child("/".join(parts[:-1]), create=create) if len(parts) > 1 else None
        try:
            yield (folder.fd if folder else self.fd), parts[-1]
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafeEntry(rel) from None
            raise
        finally:
            if folder is not None:
                folder.close()

    def lstat(self, rel: str) -> os.stat_result | None:
        """The entry itself (a link not followed), or None where there is none."""
        try:
            with self.parent_of(rel) as (fd, name):
                return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError, UnsafeEntry):
            return None

    def exists(self, rel: str) -> bool:
        return self.lstat(rel) is not None

    def is_dir(self, rel: str) -> bool:
        """Whether ``rel`` is a folder (a link to one is not)."""
        st = self.lstat(rel)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def names(self, rel: str = "") -> list[str]:
        """The names in the folder ``rel`` ("" this one); [] if it is missing or not a folder."""
        if not rel:
            return os.listdir(self.fd)
        try:
            with self.child(rel) as folder:
                return os.listdir(folder.fd)
        except (FileNotFoundError, UnsafeEntry):
            return []

    def walk(self, rel: str) -> Iterator[tuple[str, list[str], list[str], int]]:
        """``os.fwalk`` of the folder ``rel``: (relative folder, folder names, other names,
        its descriptor); a link to a folder is listed among the folders, never entered."""
        with self.child(rel) as top:
            for folder, dirs, names, fd in os.fwalk(".", dir_fd=top.fd, follow_symlinks=False):
                yield (rel if folder == "." else f"{rel}/{folder[2:]}"), dirs, names, fd

    # ---- files ------------------------------------------------------------------------

    def open_file(self, rel: str) -> int:
        """A read-only descriptor of the regular file ``rel``; ``UnsafeEntry`` for anything
        else."""
        with self.parent_of(rel) as (fd, name):
            out = os.open(name, _READ_FLAGS, dir_fd=fd)
        if not stat.S_ISREG(os.fstat(out).st_mode):
            os.close(out)
            raise UnsafeEntry(rel)
        os.set_blocking(out, True)
        return out

    def read(self, rel: str, limit: int = READ_LIMIT) -> bytes:
        """The bytes of the regular file ``rel``, at most ``limit`` of them (``TooLarge``)."""
        fd = self.open_file(rel)
        try:
            size = os.fstat(fd).st_size
            if size > limit:
                raise TooLarge(rel, size, limit)
            chunks, left = [], limit + 1
            while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
                chunks.append(chunk)
                left -= len(chunk)
            data = b"".join(chunks)
            if len(data) > limit:  # it grew after the fstat
                raise TooLarge(rel, len(data), limit)
            return data
        finally:
            os.close(fd)

    def create_file(self, rel: str, mode: int = 0o644) -> int:
        """A write-only descriptor of ``rel``, created or truncated, its folders made; a link on
        the way or at the file is refused, so a write never lands outside this folder."""
        with self.parent_of(rel, create=True) as (fd, name):
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
            return os.open(name, flags, mode, dir_fd=fd)

    def write_atomic(self, rel: str, data: bytes, mode: int = 0o644) -> None:
        """``rel`` replaced whole by ``data`` (a new file renamed over it, made durable)."""
        with self.parent_of(rel, create=True) as (fd, name):
            tmp = f".{name}.tmp-{os.getpid()}"
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
            out = os.open(tmp, flags, mode, dir_fd=fd)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(out, view) :]
                os.fsync(out)
            finally:
                os.close(out)
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            os.fsync(fd)

    def unlink(self, rel: str) -> None:
        """``rel`` removed if it is there (a link is removed, never followed)."""
        with contextlib.suppress(FileNotFoundError), self.parent_of(rel) as (fd, name):
            os.unlink(name, dir_fd=fd)

    def rename(self, old: str, new: str) -> None:
        """Rename the entry ``old`` to ``new``, both in one folder at or below this one
        (reached with no link followed)."""
        if _parts(old)[:-1] != _parts(new)[:-1]:
            raise ValueError(f"'{old}' and '{new}' are not in one folder")
        with self.parent_of(old) as (fd, name):
            os.replace(name, _parts(new)[-1], src_dir_fd=fd, dst_dir_fd=fd)

    def size(self, rel: str) -> int:
        st = self.lstat(rel)
        if st is None:
            raise FileNotFoundError(rel)
        return st.st_size

    def remove_tree(self, name: str) -> None:
        """The entry ``name`` of this folder gone, whatever it is: a folder removed with all it
        holds, a link or a file unlinked, nothing followed."""
        st = self.lstat(name)
        if st is None:
            return
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(name, dir_fd=self.fd)
        else:
            os.unlink(name, dir_fd=self.fd)
