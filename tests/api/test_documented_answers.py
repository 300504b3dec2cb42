"""Issue 51 L6: the answers a client can provoke on purpose are in the spec: a cursor this API
did not issue is a 400 on every listing that pages, a stale If-Match a 412, each problem+json
and each documented for its route in the committed openapi/openapi.json."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from app.api.openapi_dump import render

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


def _undocumented(spec: dict[str, Any]) -> list[str]:
    """Operations that take a cursor without documenting 400, or If-Match without 412 (each
    as problem+json)."""
    missing = []
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                where, name = parameter["in"], parameter["name"].lower()
                status = {("query", "cursor"): "400", ("header", "if-match"): "412"}.get(
                    (where, name)
                )
                problem = operation["responses"].get(status, {}).get("content", {})
                if status and "application/problem+json" not in problem:
                    missing.append(f"{method.upper()} {path}: {name} without {status}")
    return missing


def test_every_operation_documents_what_its_cursor_and_if_match_bring() -> None:
    """Walks the spec the app generates now (the committed one is held to it by
    `make openapi-check`): a cursor brings a 400, an If-Match a 412."""
    spec = json.loads(render())
    taking = [
        (p["in"], p["name"].lower())
        for ops in spec["paths"].values()
        for op in ops.values()
        for p in op.get("parameters", [])
    ]
    assert taking.count(("query", "cursor")) >= 8 and ("header", "if-match") in taking
    assert _undocumented(spec) == []
    # The walk sees a missing answer of either kind.
    for path, method, status in (
        ("/api/v1/jobs", "get", "400"),
        ("/api/v1/jobs/{job}", "patch", "412"),
    ):
        broken = copy.deepcopy(spec)
        del broken["paths"][path][method]["responses"][status]
        assert len(_undocumented(broken)) == 1, (path, status)


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
