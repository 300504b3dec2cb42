from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.core.db import make_sessionmaker, transaction
from app.runs.models import Run
from tests.startpoints.test_resolve import T0, write_checkpoint
from tests.support.api import make_current_run, version_body
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.sources.eventlog import EventLog, NewRecord

URL = "/api/v1/jobs/j/startpoints"


@pytest.fixture
def job(client: TestClient, cluster: str, tmp_path: Path) -> dict[str, str]:
    root = tmp_path / "log"
    stream = EventLog(root).create_stream("s", 4)
    for p in range(4):
        stream.append(p, [NewRecord(T0 + i * 1000, "k", "1") for i in range(100)])
    opts = {"root": str(root), "stream": "s"}
    body = version_body(
        queries=[
            {
                "name": "q",
                "sources": [{"name": "events", "kind": "eventlog", "options": opts}],
            }
        ]
    )
    assert client.post("/api/v1/jobs", json={"name": "j"}).status_code == 201
    assert client.post("/api/v1/jobs/j/versions", json=body).status_code == 201
    return opts


def test_set_list_withdraw(client: TestClient, job: dict[str, str]) -> None:
    r = client.put(
        URL,
        json={
            "startpoints": [
                {"source": "events", "type": "TIMESTAMP", "value": "2026-01-01T00:00:30Z"},
                {"source": "events", "partition": 2, "type": "OFFSET", "value": 7},
            ]
        },
    )
    assert r.status_code == 200, r.text
    assert r.json() == {"upserted": 2, "restart_operation_id": None}
    pending = client.get(URL).json()["pending"]
    assert [(s["partition"], s["type"], s["value"]) for s in pending] == [
        (None, "TIMESTAMP", T0 + 30_000),
        (2, "OFFSET", 7),
    ]
    # upsert replaces the same (source, partition)
    client.put(URL, json={"startpoints": [{"source": "events", "partition": 2, "type": "OLDEST"}]})
    assert client.get(URL).json()["pending"][1]["type"] == "OLDEST"
    assert client.delete(f"{URL}/events/2").status_code == 204
    assert client.delete(f"{URL}/events/2").status_code == 404
    assert client.delete(f"{URL}/events").status_code == 204
    assert client.get(URL).json()["pending"] == []
    actions = [
        e["action"] for e in client.get("/api/v1/events", params={"job": "j"}).json()["items"]
    ]
    assert actions.count("startpoints.set") == 2 and actions.count("startpoints.withdraw") == 2


@pytest.mark.parametrize(
    ("item", "needle"),
    [
        ({"source": "nope", "type": "OLDEST"}, "unknown source 'nope'"),
        ({"source": "events", "type": "OFFSET", "value": -1}, "non-negative"),
        ({"source": "events", "type": "TIMESTAMP", "value": "yesterday-ish"}, "not a timestamp"),
        ({"source": "events", "type": "OLDEST", "value": 3}, "takes no value"),
        ({"source": "events", "type": "UPCOMING", "value": 0}, "takes no value"),
        ({"source": "events", "type": "OFFSET"}, "needs a 'value'"),
        ({"source": "events", "partition": 4, "type": "OLDEST"}, "partitions 0..3"),
        ({"source": "events", "partition": 10**9, "type": "OLDEST"}, "less than or equal"),
        ({"source": "events", "type": "SOMEWHERE"}, "OLDEST"),
    ],
)
def test_bad_startpoints_are_refused_and_leave_nothing(
    client: TestClient, job: dict[str, str], item: dict[str, object], needle: str
) -> None:
    good = {"source": "events", "partition": 0, "type": "OLDEST"}
    r = client.put(URL, json={"startpoints": [good, item]})
    assert r.status_code == 422, r.text
    assert needle in json.dumps(r.json()), r.json()
    assert client.get(URL).json()["pending"] == []


def test_bulk_upsert_thousands_in_one_call(client: TestClient, cluster: str) -> None:
    body = version_body(
        queries=[
            {
                "name": "q",
                "sources": [
                    {
                        "name": "topic",
                        "kind": "kafka",
                        "options": {"subscribe": "t", "kafka.bootstrap.servers": "k:9092"},
                    }
                ],
            }
        ]
    )
    client.post("/api/v1/jobs", json={"name": "j"})
    client.post("/api/v1/jobs/j/versions", json=body)
    items = [
        {"source": "topic", "partition": p, "type": "OFFSET", "value": p * 10}
        for p in range(10_000)
    ]
    r = client.put(URL, json={"startpoints": items})
    assert r.status_code == 200 and r.json()["upserted"] == 10_000
    again = client.put(URL, json={"startpoints": [{**i, "value": 1} for i in items]})
    assert again.status_code == 200
    page = client.get(URL).json()
    pending = page["pending"]
    while page["next_cursor"]:  # 500 a page
        page = client.get(URL, params={"cursor": page["next_cursor"]}).json()
        pending += page["pending"]
    assert len(pending) == 10_000 and {s["value"] for s in pending} == {1}
    assert [s["partition"] for s in pending] == list(range(10_000))


def test_preview_apply_commit_and_revert(
    client: TestClient, job: dict[str, str], db: Engine, settings
) -> None:  # type: ignore[no-untyped-def]
    run_id, token = make_current_run(db, "j", state="stopped")
    ck = settings.resolved_checkpoint_root / "j" / str(run_id) / "q"
    write_checkpoint(ck, 3, '{"0": 50, "1": 50, "2": 50, "3": 50}')
    client.put(
        URL,
        json={
            "startpoints": [
                {"source": "events", "type": "TIMESTAMP", "value": T0 + 20_000},
                {"source": "events", "partition": 3, "type": "OFFSET", "value": 90},
            ]
        },
    )
    preview = client.post(f"{URL}/preview").json()
    assert preview["errors"] == []
    moves = {(r["partition"], r["move"], r["records"], r["target"]) for r in preview["rows"]}
    assert moves == {
        (0, "replay", 30, 20),
        (1, "replay", 30, 20),
        (2, "replay", 30, 20),
        (3, "skip", 40, 90),
    }
    assert client.get(URL).json()["pending"][0]["state"] == "pending"  # preview applies nothing

    # The run starts; its runtime applies them (as tidegate_runtime.driver.runtime does) and
    # reports.
    from tidegate_runtime.sources import positions as rt

    with transaction(make_sessionmaker(db)) as session:
        session.get(Run, run_id).state = "running"  # type: ignore[union-attr]

    directives = client.get(
        f"/api/v1/runs/{run_id}/directives", headers={"Authorization": f"Bearer {token}"}
    ).json()
    points = [rt.Startpoint.from_json(p) for p in directives["startpoints"]]
    assert len(points) == 2
    src = directives["sources"]["events"]
    app = rt.apply_to_checkpoint(ck, "q", "events", 0, src["kind"], src["options"], points)
    auth = {"Authorization": f"Bearer {token}"}
    report = [
        {
            "query": "q",
            "source": "events",
            "startpoint_ids": app.startpoint_ids,
            "checkpoint": app.checkpoint,
            "batch_id": app.batch_id,
            "before": app.before,
            "after": app.after,
            "original_file": app.original_file,
        }
    ]
    assert (
        client.post(
            f"/api/v1/runs/{run_id}/startpoints/applied", headers=auth, json=report
        ).status_code
        == 204
    )
    view = client.get(URL).json()
    assert {s["state"] for s in view["pending"]} == {"applied"}
    applied = view["applied"][0]
    assert applied["after_offsets"] == {"0": 20, "1": 20, "2": 20, "3": 90}
    assert applied["startpoints"][0]["set_by"] == "admin-token"
    assert client.post(f"{URL}/{applied['id']}/revert").status_code == 409  # job is running

    # Stopped before a batch past it committed (the driver died at start, say): revert puts
    # the offsets back, and only once.
    with transaction(make_sessionmaker(db)) as session:
        session.get(Run, run_id).state = "stopped"  # type: ignore[union-attr]
    r = client.post(f"{URL}/{applied['id']}/revert")
    assert r.status_code == 200, r.text
    assert json.loads(cp.read_offsets(ck, 3)[1][0]) == {"0": 50, "1": 50, "2": 50, "3": 50}
    assert client.post(f"{URL}/{applied['id']}/revert").status_code == 409
    assert client.get(URL).json()["pending"] == []

    # Set again and applied again by the next start; Spark commits batch 4 from there, but
    # the progress report that says so is lost.
    client.put(URL, json={"startpoints": [{"source": "events", "type": "OFFSET", "value": 60}]})
    with transaction(make_sessionmaker(db)) as session:
        session.get(Run, run_id).state = "running"  # type: ignore[union-attr]
    directives = client.get(f"/api/v1/runs/{run_id}/directives", headers=auth).json()
    points = [rt.Startpoint.from_json(p) for p in directives["startpoints"]]
    app = rt.apply_to_checkpoint(ck, "q", "events", 0, src["kind"], src["options"], points)
    report[0].update(startpoint_ids=app.startpoint_ids, before=app.before, after=app.after)
    r = client.post(f"/api/v1/runs/{run_id}/startpoints/applied", headers=auth, json=report)
    assert r.status_code == 204
    write_checkpoint(ck, 4, '{"0": 70, "1": 70, "2": 70, "3": 70}')
    # The next start must not apply it again: the checkpoint shows a batch past it.
    directives = client.get(f"/api/v1/runs/{run_id}/directives", headers=auth).json()
    assert directives["startpoints"] == []
    view = client.get(URL).json()
    assert view["pending"] == [] and view["applied"][0]["committed_at"]

    # Batch 4 committed past it: revert is refused, saying why and what to do instead.
    with transaction(make_sessionmaker(db)) as session:
        session.get(Run, run_id).state = "stopped"  # type: ignore[union-attr]
    r = client.post(f"{URL}/{view['applied'][0]['id']}/revert")
    assert r.status_code == 409, r.text
    detail = r.json()["detail"]
    assert "committed batches 4..4" in detail and "set OFFSET startpoints" in detail
    assert '{"0": 50, "1": 50, "2": 50, "3": 50}' in detail
    assert json.loads(cp.read_offsets(ck, 3)[1][0])["0"] == 60  # untouched


def test_batch_commit_progress_deletes_applied_startpoints(
    client: TestClient, job: dict[str, str], db: Engine, settings
) -> None:  # type: ignore[no-untyped-def]
    run_id, token = make_current_run(db, "j")
    auth = {"Authorization": f"Bearer {token}"}
    ck = settings.resolved_checkpoint_root / "j" / str(run_id) / "q"
    write_checkpoint(ck, 3, '{"0": 50, "1": 50, "2": 50, "3": 50}')
    client.put(URL, json={"startpoints": [{"source": "events", "type": "OLDEST"}]})
    from tidegate_runtime.sources import positions as rt

    directives = client.get(f"/api/v1/runs/{run_id}/directives", headers=auth).json()
    points = [rt.Startpoint.from_json(p) for p in directives["startpoints"]]
    src = directives["sources"]["events"]
    app = rt.apply_to_checkpoint(ck, "q", "events", 0, src["kind"], src["options"], points)
    report = [
        {
            "query": "q",
            "source": "events",
            "startpoint_ids": app.startpoint_ids,
            "checkpoint": app.checkpoint,
            "batch_id": app.batch_id,
            "before": app.before,
            "after": app.after,
            "original_file": app.original_file,
        }
    ]
    r = client.post(f"/api/v1/runs/{run_id}/startpoints/applied", headers=auth, json=report)
    assert r.status_code == 204
    # Progress of batch 3 (the one it was applied to) settles nothing; batch 4 does.
    for batch, pending in ((3, 1), (4, 0)):
        progress = {"query": "q", "batch_id": batch}
        r = client.post(f"/api/v1/runs/{run_id}/progress", headers=auth, json=progress)
        assert r.status_code == 204
        assert len(client.get(URL).json()["pending"]) == pending


def test_file_source_has_one_position(client: TestClient, cluster: str) -> None:
    body = version_body(
        queries=[
            {
                "name": "q",
                "sources": [{"name": "files", "kind": "file", "options": {"path": "/in"}}],
            }
        ]
    )
    client.post("/api/v1/jobs", json={"name": "j"})
    client.post("/api/v1/jobs/j/versions", json=body)
    r = client.put(
        URL, json={"startpoints": [{"source": "files", "partition": 0, "type": "OLDEST"}]}
    )
    assert r.status_code == 200, r.text
    r = client.put(
        URL,
        json={"startpoints": [{"source": "files", "partition": 1, "type": "OFFSET", "value": 2}]},
    )
    assert r.status_code == 422 and "file source: it has one position" in r.text
    assert [s["partition"] for s in client.get(URL).json()["pending"]] == [0]


def test_restart_in_the_same_request_needs_a_run(client: TestClient, job: dict[str, str]) -> None:
    r = client.put(
        URL, json={"startpoints": [{"source": "events", "type": "OLDEST"}], "restart": True}
    )
    assert r.status_code == 409 and "never run" in r.json()["detail"]
    assert client.get(URL).json()["pending"] == []  # nothing half-written


def test_pending_startpoints_come_in_pages(client: TestClient, job: dict[str, str]) -> None:
    """GET …/startpoints is paginated like the other lists (limit/cursor), keeping its shape:
    ``pending`` holds one page, ``next_cursor`` leads to the next."""
    items = [{"source": "events", "type": "OLDEST"}] + [
        {"source": "events", "partition": p, "type": "OFFSET", "value": p} for p in range(4)
    ]
    assert client.put(URL, json={"startpoints": items}).status_code == 200
    seen, cursor, pages = [], None, 0
    while True:
        params: dict[str, object] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = client.get(URL, params=params).json()
        assert len(page["pending"]) <= 2 and "applied" in page
        seen += [s["partition"] for s in page["pending"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [None, 0, 1, 2, 3] and pages == 3
    whole = client.get(URL).json()
    assert [s["partition"] for s in whole["pending"]] == seen and whole["next_cursor"] is None
    assert client.get(URL, params={"limit": 501}).status_code == 422
    assert client.get(URL, params={"cursor": "eyJhIjogMX0"}).status_code == 400


def test_a_run_reports_at_most_one_application_per_declared_source(
    client: TestClient, job: dict[str, str], db: Engine
) -> None:
    """Issue 51 M7: a run token posted 5,000 reports, one SELECT and INSERT each in one
    transaction. Now the list is checked against the version's sources before any row."""
    run_id, token = make_current_run(db, "j")
    auth = {"Authorization": f"Bearer {token}"}
    one = {"query": "q", "source": "events", "startpoint_ids": [], "after": {"0": 1}}
    url = f"/api/v1/runs/{run_id}/startpoints/applied"
    for body in ([one] * 500, [one, one], [{**one, "source": "not-declared"}]):
        r = client.post(url, headers=auth, json=body)
        assert r.status_code == 422, r.text
        assert "at most one application per declared source" in r.json()["detail"]
    assert client.post(url, headers=auth, json=[one]).status_code == 204
