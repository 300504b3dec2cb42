"""The runtime channel with run-scoped tokens: a run's token reaches its own run only."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from sqlalchemy import Engine, update

from app.auth.service import Scope, create_token
from app.channel import service as channel
from app.core.db import make_sessionmaker, transaction
from app.jobs.models import Job
from app.runs.models import Run
from tests.support.api import version_body


def _runs(client: TestClient, db: Engine) -> tuple[int, str, int, str]:
    client.post("/api/v1/jobs", json={"name": "j"})
    client.post("/api/v1/jobs/j/versions", json=version_body())
    with transaction(make_sessionmaker(db)) as session:
        job = session.query(Job).filter_by(name="j").one()
        out = []
        for _ in range(2):
            run = Run(
                job_id=job.id,
                version_id=job.versions[0].id,
                state="running",
                attempt=0,
                failures=0,
                created_by="t",
                progress={},
            )
            session.add(run)
            session.flush()
            _, secret = create_token(session, name=f"run-{run.id}", scope=Scope.RUN, run_id=run.id)
            out += [run.id, secret]
        job.current_run_id = out[0]
    return out[0], out[1], out[2], out[3]  # type: ignore[return-value]


def _progress(batch: int, query: str = "events") -> dict[str, object]:
    return {
        "query": query,
        "batch_id": batch,
        "num_input_rows": 10,
        "watermark": "2026-01-01T00:00:00Z",
        "sources": [
            {
                "description": "eventlog",
                "start_offset": {"0": batch * 10},
                "end_offset": {"0": batch * 10 + 10},
            }
        ],
        "state_operators": [{"operator_name": "stateStoreSave", "num_rows_total": 3}],
        "durations_ms": {"triggerExecution": 120},
    }


def test_run_token_is_confined_to_its_run(client: TestClient, db: Engine, cluster: str) -> None:
    run_id, token, other_id, _ = _runs(client, db)
    mine = {"Authorization": f"Bearer {token}"}
    r = client.get(f"/api/v1/runs/{run_id}/directives", headers=mine)
    assert r.status_code == 200 and r.json()["stop"] is False
    theirs = client.get(f"/api/v1/runs/{other_id}/directives", headers=mine)
    assert theirs.status_code == 403 and f"run {run_id}" in theirs.json()["detail"]
    assert (
        client.post(
            f"/api/v1/runs/{other_id}/progress", headers=mine, json=_progress(0)
        ).status_code
        == 403
    )
    assert client.get("/api/v1/jobs", headers=mine).status_code == 403
    assert client.get(f"/api/v1/runs/{run_id}", headers=mine).status_code == 403
    no = client.get(f"/api/v1/runs/{run_id}/directives", headers={"Authorization": ""})
    assert no.status_code == 401
    # API tokens, even admin, may not: the channel is the driver's
    # (tests/channel/test_channel_confinement.py)
    assert client.get(f"/api/v1/runs/{run_id}/directives").status_code == 403


def test_progress_is_kept_latest_and_bounded(
    client: TestClient, db: Engine, cluster, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    run_id, token, _, _ = _runs(client, db)
    monkeypatch.setattr(channel, "HISTORY_PER_QUERY", 3)
    auth = {"Authorization": f"Bearer {token}"}
    for batch in range(5):
        r = client.post(f"/api/v1/runs/{run_id}/progress", headers=auth, json=_progress(batch))
        assert r.status_code == 204, r.text
    run = client.get(f"/api/v1/runs/{run_id}").json()
    assert run["progress"]["events"]["batch_id"] == 4
    assert run["progress"]["events"]["sources"][0]["end_offset"] == {"0": 50}
    history = client.get(f"/api/v1/runs/{run_id}/progress").json()
    assert [h["batch_id"] for h in history] == [4, 3, 2]
    bad = client.post(f"/api/v1/runs/{run_id}/progress", headers=auth, json=_progress(5, "nope"))
    assert bad.status_code == 409 and "not declared" in bad.json()["detail"]


def test_a_state_operators_custom_metrics_are_kept_and_bounded(
    client: TestClient, db: Engine, cluster: str
) -> None:
    """The RocksDB store's load and copy figures reach the progress history; a report with
    more metrics than kept, or a metric that is not a number, is refused whole."""
    run_id, token, _, _ = _runs(client, db)
    auth = {"Authorization": f"Bearer {token}"}
    report = _progress(0)
    metrics = {"rocksdbLoadLatencyMs": 1520.0, "rocksdbBytesCopied": 98_000_000}
    report["state_operators"] = [
        {"operator_name": "dedupeWithinWatermark", "custom_metrics": metrics}
    ]
    r = client.post(f"/api/v1/runs/{run_id}/progress", headers=auth, json=report)
    assert r.status_code == 204, r.text
    (latest,) = client.get(f"/api/v1/runs/{run_id}/progress").json()
    assert latest["payload"]["state_operators"][0]["custom_metrics"] == {
        "rocksdbLoadLatencyMs": 1520.0,
        "rocksdbBytesCopied": 98_000_000.0,
    }
    for bad_metrics in (
        {f"m{i}": 1 for i in range(65)},
        {"rocksdbLoadLatencyMs": "slow"},
        {"rocksdbLoadLatencyMs": "NaN"},
        {"rocksdbLoadLatencyMs": "Infinity"},
    ):
        report["batch_id"] = 1
        report["state_operators"] = [{"custom_metrics": bad_metrics}]
        bad = client.post(f"/api/v1/runs/{run_id}/progress", headers=auth, json=report)
        assert bad.status_code == 422, bad.text
        assert "custom_metrics" in str(bad.json())
    raw = json.dumps({**report, "state_operators": [{"custom_metrics": {"x": 1}}]})
    for literal in ("NaN", "Infinity", "1e400"):  # JSON as some clients write it
        body = raw.replace('{"x": 1}', '{"x": ' + literal + "}")
        bad = client.post(
            f"/api/v1/runs/{run_id}/progress",
            headers={**auth, "Content-Type": "application/json"},
            content=body,
        )
        assert bad.status_code == 422, (literal, bad.text)
    history = client.get(f"/api/v1/runs/{run_id}/progress").json()
    assert [h["batch_id"] for h in history] == [0]


def test_an_idle_report_marks_the_query_idle_and_keeps_its_progress(
    client: TestClient, db: Engine, cluster: str
) -> None:
    run_id, token, _, _ = _runs(client, db)
    auth = {"Authorization": f"Bearer {token}"}
    assert (
        client.post(f"/api/v1/runs/{run_id}/progress", headers=auth, json=_progress(2)).status_code
        == 204
    )
    idle = {"query": "events", "batch_id": 2, "idle": True}
    assert (
        client.post(f"/api/v1/runs/{run_id}/progress", headers=auth, json=idle).status_code == 204
    )
    latest = client.get(f"/api/v1/runs/{run_id}").json()["progress"]["events"]
    assert latest["batch_id"] == 2 and latest["sources"][0]["end_offset"] == {"0": 30}
    assert latest["idle_at"] and "idle" not in latest
    history = client.get(f"/api/v1/runs/{run_id}/progress").json()
    assert [h["batch_id"] for h in history] == [2]  # an idle event is no batch


def test_stop_directive(client: TestClient, db: Engine, cluster: str) -> None:
    run_id, token, _, _ = _runs(client, db)
    with transaction(make_sessionmaker(db)) as session:
        session.execute(
            update(Run).where(Run.id == run_id).values(state="stopping", stop_reason="stop")
        )
    auth = {"Authorization": f"Bearer {token}"}
    d = client.get(f"/api/v1/runs/{run_id}/directives", headers=auth).json()
    assert d["stop"] is True and d["reason"] == "stop"
    stale = client.get(f"/api/v1/runs/{run_id}/directives", params={"attempt": 5}, headers=auth)
    assert stale.json()["stop"] is True and "superseded" in stale.json()["reason"]
    assert client.get(f"/api/v1/runs/{run_id}").json()["state"] == "stopping"
