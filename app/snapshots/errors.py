"""The one family of snapshot failures: catch ``SnapshotError`` for any of them."""

from __future__ import annotations


class SnapshotError(Exception):
    """A snapshot could not be stored, exported or restored."""


class StoreError(SnapshotError):
    """The store is unreachable, or a blob is missing or corrupt."""


class ExportError(SnapshotError):
    """The checkpoint cannot be exported as asked (no committed batch, unreadable files)."""


class SnapshotFailed(SnapshotError):
    """The export or restore cannot succeed as asked (permanent: retrying will not help)."""


class UnsafeFileError(SnapshotError, OSError):
    """A checkpoint entry that is not a plain file or directory (a link, device, FIFO…)."""

    def __init__(self, rel: str) -> None:
        super().__init__(
            f"'{rel}' in the checkpoint is not a regular file (a symbolic link, device or "
            "other special file): snapshots copy regular files only. Remove it from the "
            "checkpoint and retry."
        )
        self.rel = rel
