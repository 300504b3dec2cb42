from __future__ import annotations

from fastapi.testclient import TestClient


def test_mutations_and_refusals_are_audited(client: TestClient, token_for) -> None:  # type: ignore[no-untyped-def]
    client.post("/api/v1/jobs", json={"name": "a"})
    client.patch("/api/v1/jobs/a", json={"description": "d"})
    client.post("/api/v1/jobs", json={"name": "a"})  # 409
    reader = token_for("read")
    client.delete("/api/v1/jobs/a", headers={"Authorization": f"Bearer {reader}"})  # 403
    client.post("/api/v1/jobs", json={"name": "b"})
    events = client.get("/api/v1/events", params={"job": "a"}).json()["items"]
    summary = [(e["action"], e["result"], e["status_code"], e["actor"]) for e in events]
    assert summary == [
        ("job.delete", "error", 403, "test-read"),
        ("job.create", "error", 409, "admin-token"),
        ("job.update", "ok", 200, "admin-token"),
        ("job.create", "ok", 201, "admin-token"),
    ]
    assert all(e["request_id"] for e in events)
    page = client.get("/api/v1/events", params={"limit": 2}).json()
    assert len(page["items"]) == 2 and page["next_cursor"]
    rest = client.get("/api/v1/events", params={"cursor": page["next_cursor"]}).json()["items"]
    assert {e["id"] for e in rest}.isdisjoint({e["id"] for e in page["items"]})
    assert (
        client.get("/api/v1/events", params={"action": "job.update"}).json()["items"][0]["job"]
        == "a"
    )
