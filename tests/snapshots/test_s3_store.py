"""An S3 snapshot store that fails or hangs in the middle of an export, its configuration,
and what reaches an error message (see test_store.py for the behaviour every store shares)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from app.core.config import Settings
from app.snapshots.checkpoint_files import select_files
from app.snapshots.errors import StoreError
from app.snapshots.store.blobs import SnapshotStore
from tests.support.checkpoints import FakeCheckpoint
from tests.support.s3 import ACCESS_KEY, SECRET_KEY, S3Store


def _checkpoint(tmp_path: Path, batches: int = 2) -> tuple[FakeCheckpoint, tuple[str, ...]]:
    ck = FakeCheckpoint(tmp_path / "ck")
    for _ in range(batches):
        ck.batch()
    return ck, select_files(ck.root, ck.batches).files


def _assert_actionable(message: str, s3: S3Store) -> None:
    assert f"snapshot store s3://{s3.bucket}/snapshots" in message
    assert "TIDEGATE_SNAPSHOT_STORAGE_OPTIONS" in message
    assert SECRET_KEY not in message and ACCESS_KEY not in message


@pytest.mark.parametrize("mode", ["error", "hang"])
def test_a_store_failing_mid_export_leaves_nothing_listed(
    tmp_path: Path, s3: S3Store, mode: str
) -> None:
    ck, files = _checkpoint(tmp_path)
    # A short read timeout for the hang (a request that passes takes milliseconds).
    store = SnapshotStore(s3.url, s3.options(read_timeout=2))
    s3.proxy.arm(mode, after=3)  # three blobs land, then the store fails
    asked_before = len(s3.proxy.requests)
    with pytest.raises(StoreError) as failed:
        store.put_files(ck.root, files)
    message = str(failed.value)
    # The export stops at the blob that failed: none after it is begun (a hang would cost
    # another full timeout each).
    puts = [i for i, (method, _) in enumerate(s3.proxy.requests) if method == "PUT"]
    after_landed = s3.proxy.requests[puts[2] + 1 :] if len(puts) >= 3 else []
    assert len(s3.proxy.requests) > asked_before
    assert len({path for _, path in after_landed}) == 1, after_landed
    _assert_actionable(message, s3)
    assert "/blobs/" in message  # the upload, or the existence check of the next blob
    cause = "Internal" if mode == "error" else "timeout"  # the server's 500, the read timeout
    assert cause in message
    assert s3.proxy.faulted >= 1
    s3.proxy.disarm()
    assert len(s3.proxy.puts()) == 3
    # No manifest, so no snapshot; the blobs that landed are garbage the next gc collects.
    assert store.manifests() == []
    assert store.total_blob_bytes() > 0
    assert store.gc(set()).blobs_deleted == 3 and store.total_blob_bytes() == 0


def test_the_manifest_is_the_commit_point(tmp_path: Path, s3: S3Store) -> None:
    ck, files = _checkpoint(tmp_path)
    store = SnapshotStore(s3.url, s3.options())
    put = store.put_files(ck.root, files)
    s3.proxy.arm("error", after=0)  # every blob is in; the manifest's PUT fails
    with pytest.raises(StoreError, match=r"writing .*/manifests/job/s1\.json"):
        store.write_manifest("job", "s1", {"queries": {"q": {"files": put.entries}}})
    s3.proxy.disarm()
    assert store.manifests() == [] and store.read_manifest("job", "s1") is None


def test_an_unreachable_store_fails_quickly_and_says_where(tmp_path: Path, s3: S3Store) -> None:
    ck, files = _checkpoint(tmp_path, batches=1)
    options = {**s3.options(), "endpoint_url": "http://127.0.0.1:9"}  # discard: refused
    with pytest.raises(StoreError) as failed:
        SnapshotStore(s3.url, options).put_files(ck.root, files)
    _assert_actionable(str(failed.value), s3)
    assert "127.0.0.1:9" in str(failed.value)


def test_credentials_and_endpoint_from_the_aws_environment(
    tmp_path: Path, s3: S3Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    ck, files = _checkpoint(tmp_path, batches=1)
    store = SnapshotStore(s3.url)  # no options: the standard AWS chain
    put = store.put_files(ck.root, files)
    store.write_manifest("job", "s", {"queries": {"q": {"files": put.entries}}})
    assert store.manifests() == [("job", "s")]
    # A secret from the environment is redacted as well.
    s3.proxy.arm("error", after=0)
    with pytest.raises(StoreError) as failed:
        store.write_manifest("job", "t", {})
    _assert_actionable(str(failed.value), s3)


def test_unknown_option_is_a_clear_store_error(s3: S3Store) -> None:
    store = SnapshotStore(s3.url, {**s3.options(), "no_such_option": 1})
    with pytest.raises(StoreError, match="no_such_option") as failed:
        store.manifests()
    _assert_actionable(str(failed.value), s3)


def test_settings_refuse_bad_options_without_echoing_them(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as bad:
        Settings(snapshot_storage_options=f"secret={SECRET_KEY}")  # type: ignore[arg-type]
    assert "JSON object" in str(bad.value) and SECRET_KEY not in str(bad.value)
    with pytest.raises(ValidationError) as creds:
        Settings(snapshot_root=f"s3://{ACCESS_KEY}:{SECRET_KEY}@bucket/prefix")
    assert "STORAGE_OPTIONS" in str(creds.value)
    assert SECRET_KEY not in str(creds.value)
    ok = Settings(
        data_dir=tmp_path,
        snapshot_root="s3://bucket/prefix",
        snapshot_storage_options='{"endpoint_url": "http://x", "secret": "s3cr3t-value"}',  # type: ignore[arg-type]
    )
    assert ok.snapshot_storage_options_dict["secret"] == "s3cr3t-value"
    assert "s3cr3t-value" not in repr(ok) and "s3cr3t-value" not in str(ok.model_dump())
