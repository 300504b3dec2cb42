"""Issue 51 M4 and M5: what the worker reads of a checkpoint is below the folder it reached
from the checkpoint root, whatever a driver swaps in afterwards; driver-written files (restore
hints, a dry run's verdict, log files) are read without links, without waiting on a FIFO,
within a size cap, and never trusted to name content."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.core.paths import PathOutsideRoot, open_checkpoint
from app.snapshots.checkpoint_files import describe, select_files
from app.snapshots.store import digests
from app.snapshots.store.blobs import SnapshotStore
from app.worker.core.context import WorkerContext
from app.worker.dry_run.verdict import RESULT_LIMIT, read_result
from tests.support.checkpoints import FakeCheckpoint
from tests.support.flows import operate, running_job
from tidegate_runtime import contract
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.checkpoints.held_dir import READ_LIMIT


def _two_jobs(root: Path) -> tuple[FakeCheckpoint, FakeCheckpoint]:
    mine = FakeCheckpoint(root / "mine" / "1" / "q")
    other = FakeCheckpoint(root / "other" / "1" / "q")
    for _ in range(3):
        mine.batch()
    for _ in range(5):  # another job's state: more batches, other bytes
        other.batch(snapshot=True)
    return mine, other


def _swap_run_folder(root: Path) -> Path:
    """What a driver can do at any instant: its run folder replaced by a link to another
    job's run. Returns where the real folder went."""
    moved = root / "mine" / "1.moved"
    os.rename(root / "mine" / "1", moved)
    (root / "mine" / "1").symlink_to(root / "other" / "1")
    return moved / "q"


def test_an_export_reads_the_folder_it_reached_after_a_swap(tmp_path: Path) -> None:
    root = tmp_path / "checkpoints"
    _two_jobs(root)
    store = SnapshotStore(str(tmp_path / "store"))
    with open_checkpoint(root, root / "mine" / "1" / "q") as held:
        files = select_files(held, 2).files
        moved = _swap_run_folder(root)  # after the check, before any file is read
        put = store.put_files(held, files)
        info = describe(held, 2, {"name": "q", "sources": []})
        assert cp.latest_commit_batch(held) == 2  # the other job has committed batch 4
    # Every blob is my job's file, byte for byte; none is the other job's.
    for rel, entry in put.entries.items():
        blob = Path(store.blob_path(digests.content_id(entry))).read_bytes()
        assert blob == (moved / rel).read_bytes(), rel
    assert info["batch_id"] == 2 and info["sources"][0]["offset"] is not None
    # Reached again from the root, the link is refused and named, never followed.
    with pytest.raises(PathOutsideRoot, match="'mine/1'") as refused:
        open_checkpoint(root, root / "mine" / "1" / "q")
    assert "other" not in str(refused.value)


def test_a_restore_writes_into_the_folder_it_reached_after_a_swap(tmp_path: Path) -> None:
    root = tmp_path / "checkpoints"
    mine, other = _two_jobs(root)
    store = SnapshotStore(str(tmp_path / "store"))
    entries = store.put_files(mine.root, select_files(mine.root, 2).files).entries
    before = {p: p.read_bytes() for p in other.root.rglob("*") if p.is_file()}
    (root / "new" / "2").mkdir(parents=True)
    with open_checkpoint(root, root / "new" / "2") as parent:
        os.rename(root / "new" / "2", root / "new" / "2.moved")
        (root / "new" / "2").symlink_to(root / "other" / "1")  # swapped after the check
        with parent.child("q", create=True) as dest:
            store.restore(entries, dest)
    restored = root / "new" / "2.moved" / "q"
    assert all((restored / rel).read_bytes() == (mine.root / rel).read_bytes() for rel in entries)
    after = {p: p.read_bytes() for p in other.root.rglob("*") if p.is_file()}
    assert after == before  # nothing written through the link into the other job's state


def test_forged_restore_hints_in_a_checkpoint_name_no_blob(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings, tmp_path: Path
) -> None:
    """A driver's hints (the file restores of old releases wrote into the checkpoint) claiming
    its files hold another job's content: the export hashes the files themselves."""
    _, ck = running_job(client, ctx, settings, batches=3)
    store = SnapshotStore(settings.resolved_snapshot_root)
    secret = tmp_path / "secret"
    secret.write_bytes(b"another job's state")
    stolen = store.put_files(tmp_path, ["secret"]).entries["secret"]
    forged = {}
    for rel in select_files(ck.root, 2).files:
        st = (ck.root / rel).stat()
        forged[rel] = {**stolen, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    (ck.root / ".tidegate-restored.json").write_text(json.dumps(forged))

    op = operate(client, ctx, "j", "snapshots", {"name": "s1", "stop": False})

    assert op["state"] == "succeeded", op
    manifest = store.read_manifest("j", "s1")
    assert manifest is not None
    named = manifest["queries"][next(iter(manifest["queries"]))]["files"]
    forged = digests.content_id(stolen)
    assert named and all(digests.content_id(e) != forged for e in named.values())
    for rel, entry in named.items():
        blob = Path(store.blob_path(digests.content_id(entry))).read_bytes()
        assert blob == (ck.root / rel).read_bytes(), rel


def _within(seconds: float, work: object) -> None:
    done = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()  # type: ignore[operator]
        except BaseException as exc:  # handed to the test's thread
            errors.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(seconds), "the reader waited on a FIFO"
    if errors:
        raise errors[0]


def test_a_verdict_is_read_only_as_a_small_regular_file(tmp_path: Path) -> None:
    verdict = tmp_path / contract.DRY_RUN_RESULT_FILE
    verdict.write_text(json.dumps({"ok": True, "queries": {}}))
    assert read_result(tmp_path) == {"ok": True, "queries": {}}

    verdict.unlink()
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"ok": True, "token": "tg_do_not_leak"}))
    verdict.symlink_to(secret)
    assert read_result(tmp_path) is None  # a link is never followed

    verdict.unlink()
    os.mkfifo(verdict)
    _within(5, lambda: read_result(tmp_path) is None or pytest.fail("a FIFO gave a verdict"))

    verdict.unlink()
    verdict.write_text(json.dumps({"ok": True, "pad": "x" * RESULT_LIMIT}))
    assert read_result(tmp_path) is None  # over the cap: never read into memory


@pytest.mark.parametrize("plant", ["fifo", "link", "huge"])
def test_checkpoint_logs_are_read_without_links_fifos_or_unbounded_memory(
    tmp_path: Path, plant: str
) -> None:
    ck = FakeCheckpoint(tmp_path / "ck")
    for _ in range(3):
        ck.batch()
    log = ck.root / "offsets" / "2"
    log.unlink()
    if plant == "fifo":
        os.mkfifo(log)
    elif plant == "link":
        (tmp_path / "secret").write_text("v1\n{}\ntg_do_not_leak")
        log.symlink_to(tmp_path / "secret")
    else:
        with open(log, "wb") as f:
            f.truncate(READ_LIMIT + 1)  # sparse: no disk spent

    def read() -> None:
        with pytest.raises(cp.CheckpointError) as refused:
            cp.read_offsets(ck.root, 2)
        assert "tg_do_not_leak" not in str(refused.value)

    _within(5, read)
    shutil.rmtree(ck.root)
