"""Checkpoint and snapshot paths stay inside their roots: whatever a caller writes, a query's
checkpoint_location resolves inside its job's folder of the checkpoint root (symlinks
followed, '..' refused; not the root, not another job's folder) and
a snapshot name cannot name a path at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from tests.api.conftest import version_body


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
