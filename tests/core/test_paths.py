"""Checkpoint and snapshot paths stay inside their roots: whatever a caller writes, a query's
checkpoint_location resolves inside its job's folder of the checkpoint root (symlinks
followed, '..' refused; not the root, not another job's folder) and
a snapshot name cannot name a path at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.core.paths import private_dir, private_file
from app.snapshots.errors import StoreError
from app.snapshots.store.blobs import SnapshotStore
from tests.support.api import version_body


@pytest.fixture
def job(client: TestClient, cluster: str) -> str:
    assert client.post("/api/v1/jobs", json={"name": "paths"}).status_code == 201
    return "paths"


def _version(client: TestClient, job: str, location: str) -> int:
    body = version_body(
        queries=[
            {
                "name": "q",
                "sources": [{"name": "s", "kind": "rate", "options": {}}],
                "checkpoint_location": location,
            }
        ]
    )
    r = client.post(f"/api/v1/jobs/{job}/versions", json=body)
    assert r.status_code < 500, r.text
    if r.status_code == 422:
        assert r.headers["content-type"].startswith("application/problem+json")
    return r.status_code


def test_checkpoint_locations_outside_the_root_are_refused(
    client: TestClient, job: str, settings: Settings, tmp_path: Path
) -> None:
    root = settings.resolved_checkpoint_root
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "escape").symlink_to(outside)
    refused = [
        "/etc/tidegate",
        str(root) + "/../outside/q",
        str(root) + "/a/../../outside",
        "a/../../x",
        "../x",
        str(root) + "-evil/q",  # shares the root's prefix, but is a sibling
        f"file://{outside}/q",
        f"file:{root}/../x",
        str(root / "escape" / "q"),  # a symlink inside the root that leads out of it
        str(root) + "/q\x00/x",
        str(root),  # the root itself holds every job's folders
        f"file://{root}/q2",  # directly in the root, beside the jobs' folders
        str(root / "other-job" / "q"),  # another job's folder
        str(root / "paths"),  # the job's folder itself holds its runs' checkpoints
        str(root / "paths") + "/",
    ]
    for location in refused:
        assert _version(client, job, location) == 422, location
    accepted = {
        str(root / "paths" / "q"): root / "paths" / "q",
        f"file://{root}/paths/q2": root / "paths" / "q2",
        "relative/q": root / "paths" / "relative" / "q",  # relative to the job's folder
    }
    for location, stored in accepted.items():
        assert _version(client, job, location) == 201, location
        # stored resolved and absolute: the driver runs elsewhere, a relative path would escape
        items = client.get(f"/api/v1/jobs/{job}/versions").json()["items"]
        version = max(items, key=lambda v: v["number"])
        real = Path(os.path.realpath(stored))
        assert version["queries"][0]["checkpoint_location"] == str(real), version
    assert not any(outside.iterdir())


@pytest.mark.parametrize(
    "name", ["../../etc", "a/b", "..", "a..b", "/abs", "x\x00", "-dash", ".hidden", "é" * 10]
)
def test_snapshot_names_cannot_name_a_path(client: TestClient, job: str, name: str) -> None:
    r = client.post(f"/api/v1/jobs/{job}/snapshots", json={"name": name, "stop": False})
    assert r.status_code == 422, (name, r.status_code, r.text)
    r = client.post(f"/api/v1/jobs/{job}/submit", json={"version": 1, "snapshot": name})
    assert r.status_code == 422, (name, r.status_code, r.text)


# ("/.." is resolved by any RFC 3986 client before it is sent: the encoded forms are not.)
@pytest.mark.parametrize("raw", ["...", "%2e%2e", "..%2f..%2fetc", "%00", "a%5c..%5c..%5cx"])
def test_snapshot_paths_in_urls_reach_no_file(client: TestClient, job: str, raw: str) -> None:
    for method in ("GET", "DELETE"):
        r = client.request(method, f"/api/v1/jobs/{job}/snapshots/{raw}")
        assert r.status_code in (404, 422), (method, raw, r.status_code, r.text)
        assert r.headers["content-type"].startswith("application/problem+json")


def test_snapshot_root_holds_nothing_from_outside(settings: Settings) -> None:
    """Nothing above wrote anything: the snapshot root does not even exist yet."""
    root = Path(settings.resolved_snapshot_root)
    assert not root.exists() or not any(os.scandir(root))


def test_the_api_reads_event_logs_only_inside_the_allowed_roots(
    client: TestClient, cluster: str, settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A version may name any event-log folder (its driver reads it); the API itself reads
    one, to check partitions and to preview, only inside TIDEGATE_EVENTLOG_ROOTS."""
    from tidegate_runtime.sources.eventlog import EventLog

    inside = settings.data_dir.parent / "log"  # the fixture allows its tmp folder
    outside = tmp_path_factory.mktemp("elsewhere") / "log"
    for root in (inside, outside):
        EventLog(root).create_stream("s", 4)
    for job, root in (("in", inside), ("out", outside)):
        assert client.post("/api/v1/jobs", json={"name": job}).status_code == 201
        source = {"name": "e", "kind": "eventlog", "options": {"root": str(root), "stream": "s"}}
        body = version_body(queries=[{"name": "q", "sources": [source]}])
        assert client.post(f"/api/v1/jobs/{job}/versions", json=body).status_code == 201
    point = {"startpoints": [{"source": "e", "partition": 7, "type": "OLDEST"}]}
    r = client.put("/api/v1/jobs/in/startpoints", json=point)
    assert r.status_code == 422 and "partitions 0..3" in r.text  # read: it has 4
    assert client.put("/api/v1/jobs/out/startpoints", json=point).status_code == 200  # not read
    assert (
        client.put(
            "/api/v1/jobs/out/startpoints",
            json={"startpoints": [{"source": "e", "type": "OLDEST"}]},
        ).status_code
        == 200
    )
    preview = client.post("/api/v1/jobs/out/startpoints/preview").json()
    assert preview["rows"] == []
    assert [e["source"] for e in preview["errors"]] == ["e"]
    assert "TIDEGATE_EVENTLOG_ROOTS" in preview["errors"][0]["error"]
    assert str(outside) not in preview["errors"][0]["error"]


def test_event_log_roots_default_to_the_data_dir(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    assert settings.resolved_eventlog_roots == [(tmp_path / "data").absolute()]
    many = Settings(eventlog_roots=f"{tmp_path}/a, /srv/logs")
    assert many.resolved_eventlog_roots == [tmp_path / "a", Path("/srv/logs")]


def test_a_manifest_s_hash_must_be_a_digest_before_it_names_a_blob(tmp_path: Path) -> None:
    """Issue 26, #13: a manifest is read back from storage; a crafted hash such as
    ``../../<elsewhere>`` must not become a path the restore reads, whichever algorithm's
    key names it (BLAKE3, or SHA-256 as format 1 manifests did)."""
    store = SnapshotStore(str(tmp_path / "store"))
    outside = tmp_path / "secret"
    outside.write_text("not a blob")
    for key in ("blake3", "sha256"):
        for bad in ("../../secret", "ab/../../../secret", "A" * 64, "0" * 63, ""):
            with pytest.raises(StoreError, match="not a content id"):
                store.restore({"state/1.delta": {key: bad, "size": 1}}, tmp_path / "dest")
    with pytest.raises(StoreError, match="names no content hash"):
        store.restore({"state/1.delta": {"md5": "0" * 64, "size": 1}}, tmp_path / "dest")
    assert not (tmp_path / "dest" / "state" / "1.delta").exists()


def test_tidegate_makes_its_own_folders_private_and_leaves_others_as_they_are(
    tmp_path: Path,
) -> None:
    """Issue 51 M6: TIDEGATE_LOG_FILE=/tmp/x.log made /tmp 0700 (and another user's
    PostgreSQL beside it crashed). A folder or file that exists keeps its mode; what tidegate
    makes is 0700 (folders) and 0600 (files), whatever the umask."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    theirs = shared / "theirs.log"
    theirs.write_text("")
    theirs.chmod(0o644)
    old = os.umask(0o022)
    try:
        log_file = shared / "tidegate.log"
        private_file(log_file)  # what configure_logging does with TIDEGATE_LOG_FILE
        made = shared / "a" / "b"
        private_dir(made)
        private_file(theirs)
    finally:
        os.umask(old)
    mode = lambda p: p.stat().st_mode & 0o7777  # noqa: E731
    assert mode(shared) == 0o1777 and mode(theirs) == 0o644
    assert mode(log_file) == 0o600
    assert mode(shared / "a") == 0o700 and mode(made) == 0o700
