"""The one family of snapshot failures: catch ``SnapshotError`` for any of them."""

from __future__ import annotations

from tidegate_runtime.checkpoints.held_dir import UnsafeEntry


class SnapshotError(Exception):
    """A snapshot could not be stored, exported or restored."""


class StoreError(SnapshotError):
    """The store is unreachable, or a blob is missing or corrupt."""


class ExportError(SnapshotError):
    """The checkpoint cannot be exported as asked (no committed batch, unreadable files)."""


class SnapshotFailed(SnapshotError):
    """The export or restore cannot succeed as asked (permanent: retrying will not help)."""


class UnsafeFileError(SnapshotError, UnsafeEntry):
    """A checkpoint entry that is not a plain file or directory (a link, device, FIFO…); its
    message names the relative path only (``UnsafeEntry``)."""
