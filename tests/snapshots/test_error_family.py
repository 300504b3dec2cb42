"""Every snapshot failure is a ``SnapshotError``: one ``except`` catches a store, export,
restore or unsafe-file failure (an unsafe file stays an ``OSError`` for file-walking code)."""

from __future__ import annotations

import pytest

from app.snapshots.errors import (
    ExportError,
    SnapshotError,
    SnapshotFailed,
    StoreError,
    UnsafeFileError,
)


@pytest.mark.parametrize(
    "error",
    [StoreError("gone"), ExportError("no batch"), SnapshotFailed("no"), UnsafeFileError("x")],
)
def test_one_except_catches_every_snapshot_failure(error: Exception) -> None:
    with pytest.raises(SnapshotError):
        raise error


def test_an_unsafe_file_is_still_an_os_error_and_says_what_to_do() -> None:
    error = UnsafeFileError("state/0/1.delta")
    assert isinstance(error, OSError)
    assert "'state/0/1.delta'" in str(error) and "regular file" in str(error)
