from __future__ import annotations

from fastapi.testclient import TestClient


def test_cluster_secrets_are_never_echoed(client: TestClient) -> None:
    r = client.post(
        "/api/v1/clusters",
        json={
            "name": "prod",
            "kind": "standalone",
            "url": "http://127.0.0.1:9",
            "master_url": "spark://127.0.0.1:7077",
            "credentials": {"authorization": "Basic c2VjcmV0LXZhbHVl"},
        },
    )
    assert r.status_code == 201, r.text
    assert r.json()["has_credentials"] is True
    for resp in (r, client.get("/api/v1/clusters/prod"), client.get("/api/v1/clusters")):
        assert "c2VjcmV0LXZhbHVl" not in resp.text
    events = client.get("/api/v1/events").text
    assert "c2VjcmV0LXZhbHVl" not in events


def test_cluster_reachability_and_errors(client: TestClient) -> None:
    client.post("/api/v1/clusters", json={"name": "l", "kind": "livy", "url": "http://127.0.0.1:9"})
    one = client.get("/api/v1/clusters/l").json()
    assert one["reachable"] is False and one["reachability_error"]
    assert client.get("/api/v1/clusters").json()["items"][0]["reachable"] is None
    assert (
        client.post(
            "/api/v1/clusters", json={"name": "l", "kind": "livy", "url": "http://x:1"}
        ).status_code
        == 409
    )
    bad = [
        {"name": "s", "kind": "standalone", "url": "http://h:6066"},  # no master_url
        {"name": "s", "kind": "yarn", "url": "http://h:1"},
        {"name": "s", "kind": "livy", "url": "ftp://h"},
        {"name": "s", "kind": "livy", "url": "http://h:1", "master_url": "spark://h:7077"},
    ]
    for body in bad:
        r = client.post("/api/v1/clusters", json=body)
        assert r.status_code == 422, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
    assert client.get("/api/v1/clusters/nope").status_code == 404


def test_registration_is_checked_against_the_kind_s_backend_spec(client: TestClient) -> None:
    cases = [
        ({"kind": "standalone", "url": "http://h:6066"}, ["master_url"], "needs master_url"),
        ({"kind": "yarn", "url": "http://h:1"}, ["kind"], "no backend for cluster kind 'yarn'"),
        (
            {"kind": "livy", "url": "http://h:1", "ui_url": "http://h:8080"},
            ["ui_url"],
            "ui_url does not apply to a livy cluster",
        ),
    ]
    for body, fields, said in cases:
        r = client.post("/api/v1/clusters", json={"name": "s", **body})
        assert r.status_code == 422, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        problem = r.json()
        assert [e["field"] for e in problem["errors"]] == fields
        assert said in problem["detail"]
    assert client.get("/api/v1/clusters").json()["items"] == []
    ok = {"kind": "standalone", "url": "http://h:6066", "master_url": "spark://h:7077"}
    assert client.post("/api/v1/clusters", json={"name": "s", **ok}).status_code == 201
