"""The runtime channel cannot be turned into a file reader or writer, and dies with its run.

A run's token is what driver code holds; whatever it posts, the server derives every
checkpoint path itself, confines it to the job's folder, and never echoes a file's contents.
No API token (operate, admin) may post on the channel at all, and a run that ended takes no
more reports: its token is revoked by the same transition that ends it."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.core import run_states as states
from app.core.config import Settings
from app.core.db import make_sessionmaker, transaction
from app.runs.models import Run
from app.runs.service import transition
from tests.startpoints.test_resolve import write_checkpoint
from tests.support.api import make_current_run, version_body
from tidegate_runtime.checkpoints import checkpoint as cp

SECRET = "tg_the-admin-token-on-disk"
LINE = '{"0": 50}'


def _job(client: TestClient) -> None:
    body = version_body(
        queries=[{"name": "q", "sources": [{"name": "events", "kind": "rate", "options": {}}]}]
    )
    assert client.post("/api/v1/jobs", json={"name": "j"}).status_code == 201
    assert client.post("/api/v1/jobs/j/versions", json=body).status_code == 201


def _set_state(db: Engine, run_id: int, state: str) -> None:
    with transaction(make_sessionmaker(db)) as session:
        session.get_one(Run, run_id).state = state


def _report(checkpoint: str, original_file: str) -> list[dict[str, object]]:
    return [
        {
            "query": "q",
            "source": "events",
            "startpoint_ids": [],
            "checkpoint": checkpoint,
            "batch_id": 3,
            "before": {"0": 50},
            "after": {"0": 0},
            "original_file": original_file,
        }
    ]


def test_reported_paths_never_reach_revert(
    client: TestClient, db: Engine, cluster: str, settings: Settings, tmp_path: Path
) -> None:
    """The attack of finding 1: report a foreign 'checkpoint' (any folder with commits/3) and
    a secret file as the 'original', then revert. Nothing outside the job's checkpoint is
    read or written, and no file content comes back."""
    _job(client)
    secret = tmp_path / "admin-token"
    secret.write_text(SECRET + "\n")
    foreign = write_checkpoint(tmp_path / "elsewhere", 3, LINE)
    before = (foreign / "offsets" / "3").read_bytes()
    run_id, token = make_current_run(db, "j")
    auth = {"Authorization": f"Bearer {token}"}
    r = client.post(
        f"/api/v1/runs/{run_id}/startpoints/applied",
        headers=auth,
        json=_report(str(foreign), str(secret)),
    )
    assert r.status_code == 204, r.text
    app_id = client.get("/api/v1/jobs/j/startpoints").json()["applied"][0]["id"]
    _set_state(db, run_id, states.STOPPED)
    r = client.post(f"/api/v1/jobs/j/startpoints/{app_id}/revert")
    assert r.status_code == 409, r.text
    assert SECRET not in r.text
    assert str(settings.resolved_checkpoint_root / "j" / str(run_id) / "q") in r.text
    assert (foreign / "offsets" / "3").read_bytes() == before  # not rewritten


def test_revert_reads_only_the_kept_original_and_never_echoes_it(
    client: TestClient, db: Engine, cluster: str, settings: Settings, tmp_path: Path
) -> None:
    """The original offsets file is the one kept beside offsets/N; one that is a symlink
    (driver code can write its checkpoint) or not an offsets file is refused, unquoted."""
    _job(client)
    run_id, token = make_current_run(db, "j")
    ck = write_checkpoint(settings.resolved_checkpoint_root / "j" / str(run_id) / "q", 3, LINE)
    r = client.post(
        f"/api/v1/runs/{run_id}/startpoints/applied",
        headers={"Authorization": f"Bearer {token}"},
        json=_report("/etc", "/etc/passwd"),
    )
    assert r.status_code == 204, r.text
    app_id = client.get("/api/v1/jobs/j/startpoints").json()["applied"][0]["id"]
    _set_state(db, run_id, states.STOPPED)
    kept = ck / "offsets" / ".3.tidegate-orig"  # where the first rewrite keeps it
    secret = tmp_path / "admin-token"
    secret.write_text(SECRET + "\n")
    for planted in ("symlink", "not an offsets file"):
        kept.unlink(missing_ok=True)
        if planted == "symlink":
            kept.symlink_to(secret)
        else:
            kept.write_text(SECRET + "\n")
        r = client.post(f"/api/v1/jobs/j/startpoints/{app_id}/revert")
        assert r.status_code == 409, (planted, r.text)
        assert SECRET not in r.text, planted
        assert json.loads(cp.read_offsets(ck, 3)[1][0]) == {"0": 50}, planted
    kept.unlink()
    kept.write_text((ck / "offsets" / "3").read_text().replace(LINE, '{"0": 7}'))
    r = client.post(f"/api/v1/jobs/j/startpoints/{app_id}/revert")
    assert r.status_code == 200, r.text
    assert json.loads(cp.read_offsets(ck, 3)[1][0]) == {"0": 7}


def test_api_tokens_cannot_post_on_the_runtime_channel(
    client: TestClient, db: Engine, cluster: str, token_for
) -> None:  # type: ignore[no-untyped-def]
    _job(client)
    run_id, _ = make_current_run(db, "j")
    for scope in ("operate", "admin"):
        auth = {"Authorization": f"Bearer {token_for(scope)}"}
        for method, path, body in (
            ("POST", "startpoints/applied", _report("/tmp", "/etc/passwd")),
            ("POST", "progress", {"query": "q", "batch_id": 0}),
            ("POST", "drain", {"end_offsets": {}}),
            ("POST", "fenced", {"attempt": 0}),
            ("GET", "directives", None),
        ):
            r = client.request(method, f"/api/v1/runs/{run_id}/{path}", headers=auth, json=body)
            assert r.status_code == 403, (scope, path, r.text)
            assert "run's own token" in r.json()["detail"]
    # the bootstrap admin token (the client's default) too
    r = client.post(f"/api/v1/runs/{run_id}/progress", json={"query": "q", "batch_id": 0})
    assert r.status_code == 403


def test_a_run_that_ends_revokes_its_token(client: TestClient, db: Engine, cluster: str) -> None:
    """Finding 6: the transition to a terminal state revokes the run's token, in the same
    transaction; the driver that still holds it is told why."""
    _job(client)
    run_id, token = make_current_run(db, "j", state=states.STOPPING)
    auth = {"Authorization": f"Bearer {token}"}
    # The driver's last word before it exits (a drain that finished after its timeout's
    # stop): accepted while the run is live, and kept once it has ended.
    r = client.post(
        f"/api/v1/runs/{run_id}/drain",
        headers=auth,
        json={"end_offsets": {"events": {"0": 9}}, "drained": True},
    )
    assert r.status_code == 204, r.text
    assert client.get(f"/api/v1/runs/{run_id}/directives", headers=auth).status_code == 200
    with transaction(make_sessionmaker(db)) as session:
        transition(session, session.get_one(Run, run_id), states.STOPPED, reason="ended")
    r = client.get(f"/api/v1/runs/{run_id}/directives", headers=auth)
    assert r.status_code == 401, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert f"run {run_id} ended" in r.json()["detail"]
    drain = client.get(f"/api/v1/runs/{run_id}").json()["drain"]
    assert drain["end_offsets"] == {"events": {"0": 9}} and drain["drained_at"]


def test_an_ended_run_takes_no_more_reports(client: TestClient, db: Engine, cluster: str) -> None:
    """Even with a token that raced its revocation, no write lands on a run that ended."""
    _job(client)
    run_id, token = make_current_run(db, "j", state=states.STOPPED)
    auth = {"Authorization": f"Bearer {token}"}
    for path, body in (
        ("progress", {"query": "q", "batch_id": 0}),
        ("drain", {"end_offsets": {"events": {"0": 1}}, "drained": True}),
        ("startpoints/applied", _report("/tmp", "/etc/passwd")),
    ):
        r = client.post(f"/api/v1/runs/{run_id}/{path}", headers=auth, json=body)
        assert r.status_code == 409, (path, r.text)
        assert r.headers["content-type"].startswith("application/problem+json")
        assert f"Run {run_id} has ended (stopped)" in r.json()["detail"], path
    assert client.get(f"/api/v1/runs/{run_id}").json()["drain"] is None
    assert client.get("/api/v1/jobs/j/startpoints").json()["applied"] == []
