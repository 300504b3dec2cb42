"""The content-addressed store: each file once, manifests last, restores verified, gc; on a
local folder, a file:// URL and S3 (moto's server, see conftest ``make_store``)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.snapshots.checkpoint_files import select_files
from app.snapshots.errors import StoreError
from app.snapshots.store.blobs import SnapshotStore
from app.snapshots.store.digests import content_id
from app.snapshots.store.local_tree import known_hashes
from tests.support.checkpoints import FakeCheckpoint


def _export(store: SnapshotStore, ck: FakeCheckpoint, name: str, known=None):  # type: ignore[no-untyped-def]
    batch = ck.batches
    selection = select_files(ck.root, batch)
    put = store.put_files(ck.root, selection.files, known)
    store.write_manifest(
        "job",
        name,
        {"queries": {"q": {"batch_id": batch, "checkpoint": str(ck.root), "files": put.entries}}},
    )
    return put


def _blobs(store: SnapshotStore) -> list[str]:
    base = f"{store.root}/blobs"
    return sorted(store.fs.find(base)) if store.fs.exists(base) else []


def test_second_snapshot_writes_only_new_files(
    tmp_path: Path, make_store: Callable[[], SnapshotStore], request: pytest.FixtureRequest
) -> None:
    store = make_store()
    ck = FakeCheckpoint(tmp_path / "ck", delta_bytes=50_000)
    for _ in range(6):
        ck.batch()
    first = _export(store, ck, "s1")
    assert first.bytes_written == first.bytes_referenced > 6 * 2 * 50_000
    ck.batch()
    second = _export(store, ck, "s2")
    # One new delta per partition plus the small log files; every older delta is shared.
    assert second.bytes_referenced > first.bytes_referenced
    assert second.bytes_written < 1 * 2 * 50_000 + 2000
    assert second.bytes_written < first.bytes_written / 4
    assert store.total_blob_bytes() < first.bytes_referenced + second.bytes_referenced
    # With the hashes the first manifest recorded, unchanged files are not even read again.
    doc = store.read_manifest("job", "s2")
    assert doc is not None
    cache = known_hashes(ck.root, doc["queries"]["q"]["files"])
    ck.batch()
    third = _export(store, ck, "s3", cache)
    assert third.files_hashed < 12 < len(third.entries)
    written = first.files_written + second.files_written + third.files_written
    assert len(_blobs(store)) == written
    if "s3" in request.fixturenames:  # every distinct file was uploaded once, by one PUT
        puts = request.getfixturevalue("s3").proxy.puts()
        assert len(puts) == len(set(puts)) == written


def test_a_new_client_sees_the_stored_blobs(
    tmp_path: Path, make_store: Callable[[], SnapshotStore]
) -> None:
    """Dedup holds across processes (another worker): nothing is cached client-side."""
    ck = FakeCheckpoint(tmp_path / "ck")
    for _ in range(3):
        ck.batch()
    first = _export(make_store(), ck, "s1")
    again = _export(make_store(), ck, "s2")
    assert again.bytes_written == 0 and again.bytes_referenced == first.bytes_referenced


def test_identical_files_are_stored_once(
    tmp_path: Path, make_store: Callable[[], SnapshotStore]
) -> None:
    store = make_store()
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "f").write_bytes(b"same" * 1000)
    assert store.put_files(a, ["f"]).bytes_written == 4000
    again = store.put_files(b, ["f"])
    assert again.bytes_written == 0 and again.bytes_referenced == 4000
    assert len(_blobs(store)) == 1


def test_identical_files_in_one_export_are_written_once(
    tmp_path: Path, make_store: Callable[[], SnapshotStore]
) -> None:
    """Files are put several at a time: two of one content (commit logs often are) must not
    both be written (one PUT per blob on S3, one link on a folder)."""
    store = make_store()
    ck = tmp_path / "ck"
    ck.mkdir()
    for i in range(24):
        (ck / f"same-{i}").write_bytes(b"commit" * 5000)
        (ck / f"own-{i}").write_bytes(os.urandom(30_000))
    files = sorted(p.name for p in ck.iterdir())
    put = store.put_files(ck, files)
    assert put.files_written == 25 and put.bytes_written == 25 * 30_000
    assert list(put.entries) == files  # in the order asked, whatever finished first
    assert len({content_id(put.entries[f"same-{i}"]) for i in range(24)}) == 1
    assert len(_blobs(store)) == 25


def test_restore_round_trip_and_corruption(
    tmp_path: Path, make_store: Callable[[], SnapshotStore]
) -> None:
    store = make_store()
    ck = FakeCheckpoint(tmp_path / "ck")
    for _ in range(3):
        ck.batch()
    put = _export(store, ck, "s1")
    dest = tmp_path / "restored"
    hints = store.restore(put.entries, dest)
    for rel in put.entries:
        assert (dest / rel).read_bytes() == (ck.root / rel).read_bytes()
    assert set(hints) == set(put.entries)
    sha = content_id(put.entries["state/0/0/1.delta"])
    store.fs.pipe_file(store.blob_path(sha), b"rot")
    with pytest.raises(StoreError, match="corrupt"):
        store.restore(put.entries, tmp_path / "again")
    store.fs.rm_file(store.blob_path(sha))
    with pytest.raises(StoreError, match="missing"):
        store.restore(put.entries, tmp_path / "again2")


def test_a_local_restore_links_its_blobs_and_spark_writes_never_reach_them(
    tmp_path: Path,
) -> None:
    """Issue 25: with TIDEGATE_SNAPSHOT_RESTORE_LINKS, from a local store on the same
    filesystem a restore copies no byte (each file is a hard link to its read-only blob);
    Spark replaces checkpoint files by rename, which leaves the blob as it was. Without it,
    every file is a copy of its own."""
    store = SnapshotStore(str(tmp_path / "store"), restore_links=True)
    ck = FakeCheckpoint(tmp_path / "ck")
    for _ in range(3):
        ck.batch()
    put = _export(store, ck, "s1")
    copied = tmp_path / "copied"
    store.restore(put.entries, copied)
    dest = tmp_path / "restored"
    hints = store.restore(put.entries, dest, link=True)
    for rel, entry in put.entries.items():
        blob = Path(store.blob_path(content_id(entry)))
        assert (dest / rel).stat().st_ino == blob.stat().st_ino, rel
        assert (copied / rel).stat().st_ino != blob.stat().st_ino, rel
        assert stat.S_IMODE(blob.stat().st_mode) == 0o444, rel  # read-only, to drivers too
        assert hints[rel]["size"] == entry["size"]
    rel = "state/0/0/1.delta"
    before = Path(store.blob_path(content_id(put.entries[rel]))).read_bytes()
    (dest / "tmp-new").write_bytes(b"the next batch's file")
    os.replace(dest / "tmp-new", dest / rel)  # how Spark writes: a new file, renamed
    assert Path(store.blob_path(content_id(put.entries[rel]))).read_bytes() == before
    # A second restore of the same snapshot is still exactly the snapshot.
    again = tmp_path / "again"
    store.restore(put.entries, again, link=True)
    assert (again / rel).read_bytes() == (ck.root / rel).read_bytes() == before


def test_an_export_with_links_stores_the_hashed_checkpoint_files_themselves(
    tmp_path: Path,
) -> None:
    """Issue 25: with TIDEGATE_SNAPSHOT_EXPORT_LINKS a new blob on a local root is a hard
    link to the checkpoint file it was hashed from (a first export costs its hash alone);
    Spark's next files, written by rename, leave it as it was, and a restore by copy checks
    it as any blob. A file the store holds already is not linked a second time."""
    store = SnapshotStore(str(tmp_path / "store"), link_exports=True)
    ck = FakeCheckpoint(tmp_path / "ck", delta_bytes=10_000)
    for _ in range(3):
        ck.batch()
    put = _export(store, ck, "s1")
    assert put.files_written > 0 and put.bytes_written == put.bytes_referenced
    files_of: dict[str, set[int]] = {}  # a blob -> the inodes of the files of its content
    for rel, entry in put.entries.items():
        files_of.setdefault(content_id(entry), set()).add((ck.root / rel).stat().st_ino)
        assert Path(store.blob_path(content_id(entry))).read_bytes() == (ck.root / rel).read_bytes()
    for sha, inodes in files_of.items():  # each blob is one of its files, linked
        assert Path(store.blob_path(sha)).stat().st_ino in inodes, sha
    assert list((tmp_path / "store" / "tmp").iterdir()) == []
    rel = "state/0/0/1.delta"
    before = (ck.root / rel).read_bytes()
    (ck.root / "tmp-new").write_bytes(b"a rewritten batch")
    os.replace(ck.root / "tmp-new", ck.root / rel)  # how Spark writes: a new file, renamed
    assert Path(store.blob_path(content_id(put.entries[rel]))).read_bytes() == before
    restored = tmp_path / "restored"
    store.restore(put.entries, restored)  # copied, every hash checked
    assert (restored / rel).read_bytes() == before
    ck.batch()
    second = _export(store, ck, "s2")
    assert 0 < second.bytes_written < second.bytes_referenced  # the new batch's files only
    # A file others may write (or another user's) is copied, read-only, even with the setting.
    shared = ck.root / "state" / "0" / "0" / "shared.delta"
    shared.write_bytes(b"group-writable")
    shared.chmod(0o664)
    put = store.put_files(ck.root, ["state/0/0/shared.delta"])
    blob = Path(store.blob_path(content_id(put.entries["state/0/0/shared.delta"])))
    assert blob.stat().st_ino != shared.stat().st_ino and blob.stat().st_mode & 0o222 == 0
    # Without the setting (the default) every blob is a copy of its own.
    copies = SnapshotStore(str(tmp_path / "copies"))
    for rel, entry in _export(copies, ck, "s3").entries.items():
        assert (ck.root / rel).stat().st_ino != Path(
            copies.blob_path(content_id(entry))
        ).stat().st_ino


def test_an_export_links_only_where_the_kernel_allows_and_copies_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another device, or a file of another user under fs.protected_hardlinks: the link
    fails and the blob is a read-only copy, as without the setting."""

    def refused(src: str, dst: str, **kwargs: object) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", refused)
    store = SnapshotStore(str(tmp_path / "store"), link_exports=True)
    ck = FakeCheckpoint(tmp_path / "ck")
    ck.batch()
    put = _export(store, ck, "s1")
    for rel, entry in put.entries.items():
        blob = Path(store.blob_path(content_id(entry)))
        assert blob.stat().st_ino != (ck.root / rel).stat().st_ino
        assert (
            blob.stat().st_mode & 0o222 == 0 and blob.read_bytes() == (ck.root / rel).read_bytes()
        )


def test_a_restore_keeps_what_a_prestage_put_there_and_only_that(tmp_path: Path) -> None:
    """Issue 25: restored ahead of the stop (``present``: path -> content id), a file the
    snapshot names with the same hash is kept as it is (not read, not written); one it names
    with another hash is replaced, one it does not name is removed, and one missing is
    restored: the folder ends holding exactly the snapshot."""
    store = SnapshotStore(str(tmp_path / "store"))
    ck = FakeCheckpoint(tmp_path / "ck", delta_bytes=10_000)
    for _ in range(3):
        ck.batch()
    early = _export(store, ck, "early").entries  # what a pre-copy holds
    dest = tmp_path / "staging"
    store.restore(early, dest)
    present = {rel: content_id(e) for rel, e in early.items()}
    ck.batch()
    final = _export(store, ck, "final").entries
    kept_rel = next(rel for rel in early if rel.startswith("state/"))
    kept_inode = (dest / kept_rel).stat().st_ino
    changed = next(rel for rel in early if rel.startswith("offsets/"))
    (dest / changed).unlink()
    (dest / changed).write_text("not what the snapshot holds")
    present[changed] = "blake3:" + "0" * 64  # the prestage's record says another content
    (dest / "state" / "0" / "0" / "stray.delta").write_bytes(b"a file the snapshot lacks")
    # Links driver code could plant there: removed, never followed.
    elsewhere = tmp_path / "another-jobs-checkpoint"
    (elsewhere / "0").mkdir(parents=True)
    (elsewhere / "0" / "1.delta").write_bytes(b"not ours")
    (dest / "state" / "1").symlink_to(elsewhere, target_is_directory=True)
    (dest / "state" / "0" / "0" / "linked.delta").symlink_to(elsewhere / "0" / "1.delta")
    hints = store.restore(final, dest, present=present)
    assert (elsewhere / "0" / "1.delta").read_bytes() == b"not ours"
    assert not (dest / "state" / "1").is_symlink()
    assert (dest / kept_rel).stat().st_ino == kept_inode  # left alone
    on_disk = {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()}
    assert on_disk == set(final) == set(hints)
    for rel in final:
        assert (dest / rel).read_bytes() == (ck.root / rel).read_bytes(), rel
    assert set(final) - set(early)  # the last batch's files came after the prestage


def test_manifest_is_atomic_and_versioned(make_store: Callable[[], SnapshotStore]) -> None:
    store = make_store()
    assert store.read_manifest("job", "nope") is None
    where = store.write_manifest("job", "s", {"queries": {}})
    assert where.endswith("/manifests/job/s.json")
    assert store.local or where.startswith("s3://")  # a URL the operator can use
    assert store.read_manifest("job", "s") == {"format": 2, "queries": {}}
    assert store.manifests() == [("job", "s")]
    leftovers = store.fs.ls(f"{store.root}/manifests/job", detail=False)
    assert [str(p).rsplit("/", 1)[-1] for p in leftovers] == ["s.json"]


def test_gc_keeps_what_live_manifests_name(
    tmp_path: Path, make_store: Callable[[], SnapshotStore]
) -> None:
    store = make_store()
    ck = FakeCheckpoint(tmp_path / "ck", delta_bytes=10_000)
    for _ in range(3):
        ck.batch()
    _export(store, ck, "s1")
    ck.batch()
    _export(store, ck, "s2")
    before = store.total_blob_bytes()
    result = store.gc({("job", "s2")})
    assert result.manifests_deleted == 1 and store.manifests() == [("job", "s2")]
    # s1's files are all still used by s2 except offsets/0, commits/0 and their sidecars.
    assert 0 < result.blobs_deleted <= 4 and store.total_blob_bytes() == before - result.bytes_freed
    doc = store.read_manifest("job", "s2")
    assert doc is not None
    store.restore(doc["queries"]["q"]["files"], tmp_path / "r")  # nothing s2 needs was lost
    result = store.gc(set())
    assert store.total_blob_bytes() == 0 and result.manifests_deleted == 1


def _legacy_snapshot(store: SnapshotStore, ck: FakeCheckpoint, name: str) -> dict[str, Any]:
    """A snapshot as tidegate wrote it before BLAKE3 (manifest format 1): each file's blob
    at ``blobs/<sha256[:2]>/<sha256>``, entries naming it by ``sha256``."""
    entries: dict[str, Any] = {}
    for rel in select_files(ck.root, ck.batches).files:
        path = ck.root / rel
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        store.fs.makedirs(f"{store.root}/blobs/{digest[:2]}", exist_ok=True)
        store.fs.pipe_file(f"{store.root}/blobs/{digest[:2]}/{digest}", data)
        entries[rel] = {"sha256": digest, "size": len(data), "mtime_ns": path.stat().st_mtime_ns}
    query = {"batch_id": ck.batches, "checkpoint": str(ck.root), "files": entries}
    doc = {"format": 1, "queries": {"q": query}}
    store.fs.makedirs(f"{store.root}/manifests/job", exist_ok=True)
    store.fs.pipe_file(store.manifest_path("job", name), json.dumps(doc).encode())
    return entries


def test_snapshots_named_by_sha256_are_restored_shared_and_kept(
    tmp_path: Path, make_store: Callable[[], SnapshotStore]
) -> None:
    """A store written before BLAKE3 goes on working: its snapshots restore (every SHA-256
    checked), the next export shares their blobs instead of writing the files again (the
    hash cache knows them by their SHA-256), and gc keeps the blobs live manifests name
    under either algorithm."""
    store = make_store()
    ck = FakeCheckpoint(tmp_path / "ck", delta_bytes=20_000)
    for _ in range(3):
        ck.batch()
    old = _legacy_snapshot(store, ck, "s1")
    doc = store.read_manifest("job", "s1")
    assert doc is not None and doc["format"] == 1
    restored = tmp_path / "restored"
    hints = store.restore(old, restored)
    for rel, entry in old.items():
        assert (restored / rel).read_bytes() == (ck.root / rel).read_bytes()
        assert content_id(hints[rel]) == f"sha256:{entry['sha256']}"
    ck.batch()
    new = _export(store, ck, "s2", known_hashes(ck.root, old))
    shared = [rel for rel in old if rel in new.entries]
    assert shared and all(new.entries[rel]["sha256"] == old[rel]["sha256"] for rel in shared)
    added = [rel for rel in new.entries if rel not in old]
    assert added and all("blake3" in new.entries[rel] for rel in added)
    assert new.bytes_written == sum(new.entries[rel]["size"] for rel in added)
    # Mixed manifests restore whole; gc keeps both kinds of blob a live manifest names.
    again = tmp_path / "again"
    store.restore(new.entries, again)
    assert all((again / rel).read_bytes() == (ck.root / rel).read_bytes() for rel in new.entries)
    result = store.gc({("job", "s2")})
    assert result.manifests_deleted == 1
    named = {store.blob_path(content_id(entry)) for entry in new.entries.values()}
    assert set(_blobs(store)) == named
    # A SHA-256 blob that rotted is caught like any other.
    rel = shared[0]
    store.fs.pipe_file(store.blob_path(f"sha256:{old[rel]['sha256']}"), b"rot")
    with pytest.raises(StoreError, match="corrupt"):
        store.restore({rel: new.entries[rel]}, tmp_path / "rotten")


def test_a_store_keeps_its_files_to_the_worker(tmp_path: Path) -> None:
    """Issue 51 L1: the store's folders are 0700, its manifests 0600 and its blobs 0400; with
    restore links a blob is 0444 (a driver of another user reads it through its link, never
    through the store). A blob written private is copied by a restore with links, not linked."""
    ck = FakeCheckpoint(tmp_path / "ck")
    ck.batch()
    private = SnapshotStore(str(tmp_path / "store"))
    put = _export(private, ck, "s1")
    root = tmp_path / "store"
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    folders = [root, *(p for p in root.rglob("*") if p.is_dir())]
    assert {mode(p) for p in folders} == {0o700}, [(p, oct(mode(p))) for p in folders]
    assert mode(Path(private.manifest_path("job", "s1"))) == 0o600
    blobs = [Path(private.blob_path(content_id(e))) for e in put.entries.values()]
    assert {mode(b) for b in blobs} == {0o400}
    # Turned on later: the private blobs are copied, and new blobs are linked.
    linking = SnapshotStore(str(root), restore_links=True)
    dest = tmp_path / "restored"
    linking.restore(put.entries, dest, link=True)
    for rel, entry in put.entries.items():
        assert (dest / rel).stat().st_ino != Path(
            linking.blob_path(content_id(entry))
        ).stat().st_ino
        assert (dest / rel).read_bytes() == (ck.root / rel).read_bytes()
    ck.batch()
    later = _export(linking, ck, "s2")
    new = {rel: e for rel, e in later.entries.items() if rel not in put.entries}
    assert new
    again = tmp_path / "again"
    linking.restore(later.entries, again, link=True)
    for rel, entry in new.items():
        blob = Path(linking.blob_path(content_id(entry)))
        assert mode(blob) == 0o444 and (again / rel).stat().st_ino == blob.stat().st_ino, rel
