"""Driver code writes checkpoints, so it can plant links there: snapshots copy regular files
only and refuse anything else, naming the relative path and never what it points to."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.snapshots.checkpoint_files import select_files
from app.snapshots.errors import UnsafeFileError
from app.snapshots.store.blobs import SnapshotStore
from app.snapshots.store.local_tree import copy_tree_files
from app.worker.core.context import WorkerContext
from tests.support.checkpoints import FakeCheckpoint
from tests.support.flows import API, operate, running_job

SECRET = "TIDEGATE_ADMIN_TOKEN=tg_do_not_leak_0123456789abcdef"


def _link_file(ck: Path, secret: Path) -> str:
    target = ck / "state" / "0" / "1" / "2.delta"
    target.unlink()
    target.symlink_to(secret)
    return "state/0/1/2.delta"


def _link_dir(ck: Path, secret: Path) -> str:
    folder = ck / "state" / "0" / "1"
    shutil.rmtree(folder)
    folder.symlink_to(secret.parent)
    return "state/0/1"


def _link_log(ck: Path, secret: Path) -> str:
    (ck / "offsets" / "1").unlink()
    (ck / "offsets" / "1").symlink_to(secret)
    return "offsets/1"


def _fifo(ck: Path, secret: Path) -> str:
    (ck / "state" / "0" / "0" / "_metadata" / "schema").unlink()
    os.mkfifo(ck / "state" / "0" / "0" / "_metadata" / "schema")
    return "state/0/0/_metadata/schema"


PLANTS: dict[str, Callable[[Path, Path], str]] = {
    "linked-state-file": _link_file,
    "linked-state-dir": _link_dir,
    "linked-offsets-log": _link_log,
    "fifo": _fifo,
}


@pytest.mark.parametrize("plant", list(PLANTS))
def test_export_refuses_what_is_not_a_regular_file(
    client: TestClient,
    cluster: str,
    ctx: WorkerContext,
    settings: Settings,
    tmp_path: Path,
    plant: str,
) -> None:
    _, ck = running_job(client, ctx, settings, batches=3)
    secret = tmp_path / "outside" / "environ"
    secret.parent.mkdir()
    secret.write_text(SECRET)
    rel = PLANTS[plant](ck.root, secret)

    op = operate(client, ctx, "j", "snapshots", {"name": "s1", "stop": False})

    assert op["state"] == "failed", op
    assert rel in op["error"] and "regular file" in op["error"]
    listed = client.get(f"{API}/snapshots", params={"job": "j"})
    everything = listed.text + client.get(f"{API}/jobs/j/snapshots/s1").text + str(op)
    assert "tg_do_not_leak" not in everything and str(secret) not in everything
    assert all(s["state"] != "ready" for s in listed.json()["items"])
    assert not list(Path(settings.resolved_snapshot_root).glob("manifests/**/*.json"))


def test_restore_writes_no_file_outside_its_destination(tmp_path: Path) -> None:
    store = SnapshotStore(str(tmp_path / "store"))
    src = tmp_path / "src"
    src.mkdir()
    (src / "f").write_bytes(b"state")
    entry = store.put_files(src, ["f"]).entries["f"]
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(UnsafeFileError):
        store.restore({"../escaped": entry}, dest)
    assert not (tmp_path / "escaped").exists()
    # A link already in the destination is not written through.
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    (dest / "state").symlink_to(tmp_path)
    with pytest.raises(UnsafeFileError, match="'state'"):
        store.restore({"state/victim": entry}, dest)
    (dest / "offsets").mkdir()
    (dest / "offsets" / "0").symlink_to(victim)
    with pytest.raises(UnsafeFileError, match="'offsets/0'"):
        store.restore({"offsets/0": entry}, dest)
    assert victim.read_text() == "untouched"


def test_resume_from_a_run_copies_no_link(tmp_path: Path) -> None:
    ck = FakeCheckpoint(tmp_path / "ck")
    for _ in range(3):
        ck.batch()
    secret = tmp_path / "environ"
    secret.write_text(SECRET)
    rel = _link_file(ck.root, secret)
    files = select_files(ck.root, 2).files
    assert rel in files
    (tmp_path / "new").mkdir()
    with pytest.raises(UnsafeFileError, match=rel):
        copy_tree_files(ck.root, files, tmp_path / "new")
    copied = [p for p in (tmp_path / "new").rglob("*") if p.is_file() or p.is_symlink()]
    assert all(not p.is_symlink() and SECRET.encode() not in p.read_bytes() for p in copied)


def test_export_refuses_a_link_above_the_checkpoint(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    """Issue 26, #6: ``CHECKPOINT_ROOT/<job>/<run>`` replaced by a link to another job's run
    made the export read that job's state (files are opened without following links only
    from the checkpoint down)."""
    _, ck = running_job(client, ctx, settings, batches=3)
    run_folder = ck.root.parent  # CHECKPOINT_ROOT/j/<run>
    other = settings.resolved_checkpoint_root / "other-job" / run_folder.name
    other.parent.mkdir(parents=True)
    shutil.move(run_folder, other)  # the other job's state, now reached only through a link
    run_folder.symlink_to(other)

    op = operate(client, ctx, "j", "snapshots", {"name": "s1", "stop": False})

    assert op["state"] == "failed", op
    assert "symbolic link" in op["error"] and "other-job" not in op["error"]
    assert not list(Path(settings.resolved_snapshot_root).glob("manifests/**/*.json"))
