from __future__ import annotations

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text

from app.api.main import create_app
from app.core.config import Settings
from tests.conftest import ADMIN_TOKEN
from tests.support.waiting import served


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


def test_unauthenticated_refusals_leave_no_audit_rows(client: TestClient, token_for) -> None:  # type: ignore[no-untyped-def]
    """Anyone can send requests without a valid token; auditing each 401 would let them fill
    the table. Authenticated refusals still are audited, with the token's id."""
    before = client.get("/api/v1/events").json()["items"]
    for header in ("", "Bearer tg_nope", "Basic eDp5"):
        for _ in range(5):
            r = client.post(
                "/api/v1/jobs", json={"name": "flood"}, headers={"Authorization": header}
            )
            assert r.status_code == 401
        assert client.delete("/api/v1/jobs/x", headers={"Authorization": header}).status_code == 401
    assert client.get("/api/v1/events").json()["items"] == before
    reader = token_for("read")
    r = client.post(
        "/api/v1/jobs", json={"name": "a"}, headers={"Authorization": f"Bearer {reader}"}
    )
    assert r.status_code == 403
    event = client.get("/api/v1/events").json()["items"][0]
    assert (event["action"], event["status_code"], event["actor"]) == (
        "job.create",
        403,
        "test-read",
    )
    tokens = {t["name"]: t["id"] for t in client.get("/api/v1/tokens").json()}
    assert event["actor_token_id"] == tokens["test-read"]


def test_events_name_the_token_that_acted(client: TestClient) -> None:
    """A token's name is free text (two tokens may share one); the event keeps its id."""
    ids = []
    for _ in range(2):
        r = client.post("/api/v1/tokens", json={"name": "deploy", "scope": "operate"})
        assert r.status_code == 201
        ids.append((r.json()["id"], r.json()["token"]))
    for n, (_, secret) in enumerate(ids):
        auth = {"Authorization": f"Bearer {secret}"}
        assert client.post("/api/v1/jobs", json={"name": f"j{n}"}, headers=auth).status_code == 201
    for n, (token_id, _) in enumerate(ids):
        (event,) = client.get("/api/v1/events", params={"job": f"j{n}"}).json()["items"]
        assert (event["actor"], event["actor_token_id"]) == ("deploy", token_id)
    client.post("/api/v1/jobs", json={"name": "boot"})  # the bootstrap admin token: no row
    (event,) = client.get("/api/v1/events", params={"job": "boot"}).json()["items"]
    assert (event["actor"], event["actor_token_id"]) == ("admin-token", None)


def test_a_token_cannot_fill_the_audit_log_with_its_own_refusals(
    client: TestClient,
    token_for,  # type: ignore[no-untyped-def]
) -> None:
    """Issue 26, #10: twenty forbidden POST /jobs by a read token were twenty rows. Repeats of
    one refusal within a minute are counted, and the next row of that kind says how many."""
    reader = {"Authorization": f"Bearer {token_for('read')}"}
    for _ in range(20):
        assert client.post("/api/v1/jobs", json={"name": "x"}, headers=reader).status_code == 403
    assert client.delete("/api/v1/jobs/x", headers=reader).status_code == 403  # another kind
    events = client.get("/api/v1/events").json()["items"]
    assert [(e["action"], e["status_code"]) for e in events] == [
        ("job.delete", 403),
        ("job.create", 403),
    ]
    # The window passes: the next refusal of that kind is recorded with its count.
    client.app.state.refusals.window = 0  # type: ignore[attr-defined]
    assert client.post("/api/v1/jobs", json={"name": "x"}, headers=reader).status_code == 403
    latest = client.get("/api/v1/events").json()["items"][0]
    assert latest["action"] == "job.create"
    assert latest["detail"]["repeats_not_recorded"] == 19


def test_a_refusal_is_on_record_when_the_client_has_its_answer(
    db: Engine, settings: Settings
) -> None:
    """Under a real server the response reaches the client before the app's call returns: the
    refusal's audit row is written before the response's last byte, so a client (or a test
    emptying the store next) never races it."""
    settings.resolved_checkpoint_root.mkdir(parents=True, exist_ok=True)
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    app = create_app(settings, db)
    app.state.refusals.window = 0  # every refusal recorded: repeats of one kind are counted
    with (
        served(app, lifespan="off") as url,
        httpx.Client(base_url=url, headers=headers, timeout=10) as http,
        db.connect() as conn,
    ):
        for i in range(10):
            assert http.post("/api/v1/jobs", json={"name": f"dup-{i}"}).status_code == 201
            assert http.post("/api/v1/jobs", json={"name": f"dup-{i}"}).status_code == 409
            refused = conn.scalar(
                text("select count(*) from audit_events where result = 'error' and job = :job"),
                {"job": f"dup-{i}"},
            )
            conn.rollback()
            assert refused == 1, f"the refusal of dup-{i} was not on record with its answer"


def test_new_job_names_and_made_up_paths_do_not_make_new_rows(
    client: TestClient,
    token_for,  # type: ignore[no-untyped-def]
) -> None:
    """Issue 51 M2: refusals were counted per job name and, off the routes, per raw path, so
    each new name was a new row. Now per token, route and status."""
    reader = {"Authorization": f"Bearer {token_for('read')}"}
    for i in range(40):
        r = client.delete(f"/api/v1/jobs/new-name-{i}", headers=reader)
        assert r.status_code == 403
        r = client.post(f"/api/v1/made-up-{i}", json={}, headers=reader)
        assert r.status_code in (404, 405)
    events = client.get("/api/v1/events").json()["items"]
    assert sorted((e["action"], e["status_code"]) for e in events) == [
        ("job.delete", 403),
        ("unmatched", 404),
    ], events
