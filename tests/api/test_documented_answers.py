"""Issue 51 L6: the answers a client can provoke on purpose are in the spec: a cursor this API
did not issue is a 400 on every listing that pages, a stale If-Match a 412, each problem+json
and each documented for its route in the committed openapi/openapi.json."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

ROOT = Path(__file__).resolve().parents[2]
SPEC = json.loads((ROOT / "openapi" / "openapi.json").read_text())
PAGED = sorted(
    path
    for path, ops in SPEC["paths"].items()
    if any(p["name"] == "cursor" for p in ops.get("get", {}).get("parameters", []))
)


def _documented(path: str, method: str, status: int) -> bool:
    responses = SPEC["paths"][path][method]["responses"]
    return str(status) in responses and "application/problem+json" in responses[str(status)].get(
        "content", {}
    )


def test_every_paged_listing_refuses_a_foreign_cursor_as_documented(
    client: TestClient, cluster: str
) -> None:
    assert len(PAGED) >= 8, PAGED
    assert client.post("/api/v1/jobs", json={"name": "j"}).status_code == 201
    for path in PAGED:
        r = client.get(path.replace("{job}", "j"), params={"cursor": "not-a-cursor-of-ours"})
        assert r.status_code == 400, (path, r.status_code, r.text)
        assert r.headers["content-type"].startswith("application/problem+json")
        assert "cursor" in r.json()["detail"], r.json()
        assert _documented(path, "get", 400), path


def test_a_stale_if_match_is_a_documented_412(client: TestClient) -> None:
    job = client.post("/api/v1/jobs", json={"name": "k"}).json()
    etag = f'"{job["revision"]}"'
    first = client.patch("/api/v1/jobs/k", json={"description": "a"}, headers={"If-Match": etag})
    assert first.status_code == 200, first.text
    r = client.patch("/api/v1/jobs/k", json={"description": "b"}, headers={"If-Match": etag})
    assert r.status_code == 412, r.text
    assert "changed since you read it" in r.json()["detail"]
    assert _documented("/api/v1/jobs/{job}", "patch", 412)
