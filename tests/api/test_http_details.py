"""HTTP details found by fuzzing: ``Allow`` on a 405 names every method of the path, and a
request is validated before any precondition (If-Match) is checked."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient

from tests.support.api import version_body


def test_405_allow_lists_every_method_routed_for_the_path(client: TestClient) -> None:
    by_path: dict[str, set[str]] = defaultdict(set)
    for route in iter_route_contexts(client.app.router.routes):  # type: ignore[attr-defined]
        if route.path and route.methods:
            by_path[route.path] |= route.methods
    several = {p: m for p, m in by_path.items() if len(m - {"HEAD"}) > 1}
    assert len(several) >= 10  # the paths served by more than one route (12 when found)
    for template, methods in by_path.items():
        path = re.sub(r"\{[^}]+\}", "x1", re.sub(r"\{[^}:]+:int\}", "1", template))
        r = client.request("OPTIONS", path)
        assert r.status_code == 405, path
        assert r.headers["content-type"].startswith("application/problem+json")
        allowed = set(r.headers["allow"].split(", "))
        assert methods <= allowed, path
        assert all(m in r.json()["detail"] for m in allowed)
        for method in allowed - {"HEAD"}:  # and nothing it names is itself refused with 405
            assert client.request(method, path).status_code != 405, (method, path)


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/api/v1/jobs/j/startpoints/preview", "POST"),
        ("/api/v1/jobs/j/startpoints/7/revert", "POST"),
    ],
)
def test_a_route_of_its_own_is_not_also_a_source(
    client: TestClient, cluster: str, path: str, allowed: str
) -> None:
    """`preview` and `<id>/revert` are not a source's or a partition's startpoints: OPTIONS and
    DELETE there answer 405 naming only what the spec has, and no source may be called so."""
    for method in ("OPTIONS", "DELETE"):
        r = client.request(method, path)
        assert r.status_code == 405, (method, r.text)
        assert r.headers["allow"] == allowed
    assert client.post("/api/v1/jobs", json={"name": "j"}).status_code == 201
    body = version_body()
    body["queries"][0]["sources"][0]["name"] = "preview"  # type: ignore[index]
    r = client.post("/api/v1/jobs/j/versions", json=body)
    assert r.status_code == 422 and "reserved" in r.text


def test_options_on_jobs_allows_get_and_post(client: TestClient) -> None:
    r = client.request("OPTIONS", "/api/v1/jobs")
    assert r.status_code == 405
    assert {"GET", "POST"} <= set(r.headers["allow"].split(", "))


@pytest.mark.parametrize(
    "body",
    [
        {"description": "nul \u0000 inside"},
        {"restart_policy": {"max_backoff": "99999999999999999999d"}},
        {"description": 5},
    ],
    ids=["nul", "overflowing-duration", "wrong-type"],
)
def test_patch_invalid_body_with_stale_if_match_is_422(
    client: TestClient, body: dict[str, object]
) -> None:
    assert client.post("/api/v1/jobs", json={"name": "j"}).status_code == 201
    r = client.patch("/api/v1/jobs/j", json=body, headers={"If-Match": '"stale"'})
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    # The same body with a current If-Match is refused the same way; nothing changed.
    r = client.patch("/api/v1/jobs/j", json=body, headers={"If-Match": '"1"'})
    assert r.status_code == 422, r.text
    assert client.get("/api/v1/jobs/j").json()["revision"] == 1
