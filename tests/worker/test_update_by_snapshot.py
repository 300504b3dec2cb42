"""An update by snapshot, carried out by the worker: refused before anything stops when the
new version does not fit the state, the state carried over, the dry run inside a pre-warmed
standby (and its refusal, and its retry), cold unless asked, a rollback from the same
snapshot (a scripted backend stands in for Spark)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.backends.base import AppState, AppStatus
from app.core.config import Settings
from app.core.plans import StoredPlan
from app.operations.models import Operation
from app.snapshots import restored_hints
from app.snapshots.models import SnapshotUse
from app.snapshots.store.blobs import SnapshotStore
from app.worker.core.context import WorkerContext
from app.worker.runs import start
from tests.support.flows import (
    API,
    COUNTS,
    ENRICH,
    checkpoint_dir,
    get_snapshot,
    make_version,
    operate,
    running_job,
)
from tests.support.worker import FakeBackend
from tidegate_runtime import contract


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        ({"conf": {"spark.sql.shuffle.partitions": 4}}, "state_partitions"),
        ({"queries": [{**COUNTS, "name": "counts_v2"}]}, "renamed"),
        (
            {"queries": [{**COUNTS, "stateful_operators": [{"kind": "session_window"}]}]},
            "operator_kind",
        ),
        (
            {
                "queries": [
                    {
                        **COUNTS,
                        "stateful_operators": [
                            {
                                "kind": "tumbling_window",
                                "value_schema": "count BIGINT, avg DOUBLE, n BIGINT",
                            }
                        ],
                    }
                ]
            },
            "value_schema",
        ),
    ],
)
def test_incompatible_version_is_refused_before_anything_stops(
    client: TestClient,
    cluster: str,
    ctx: WorkerContext,
    settings: Settings,
    change: dict[str, Any],
    kind: str,
) -> None:
    run_id, _ = running_job(client, ctx, settings)
    assert operate(client, ctx, "j", "snapshots", {"name": "s1"})["state"] == "succeeded"
    queries = change.get("queries", [COUNTS])
    bad = make_version(client, "j", *queries, **change.get("conf", {}))

    compat = client.post(f"{API}/jobs/j/compatibility", json={"version": bad, "snapshot": "s1"})
    body = compat.json()
    assert compat.status_code == 200 and body["compatible"] is False
    assert [p["kind"] for p in body["problems"]] == [kind]
    problem = body["problems"][0]
    assert problem["query"] and problem["detail"]

    update = client.post(f"{API}/jobs/j/update", json={"version": bad})
    assert update.status_code == 409, update.text
    assert [p["kind"] for p in update.json()["problems"]] == [kind]
    assert client.get(f"{API}/runs/{run_id}").json()["state"] == "running"  # untouched
    kinds = [o["kind"] for o in client.get(f"{API}/jobs/j/operations").json()["items"]]
    assert kinds == ["snapshot", "submit"]

    assert operate(client, ctx, "j", "stop")["state"] == "succeeded"
    submit = client.post(f"{API}/jobs/j/submit", json={"version": bad, "snapshot": "s1"})
    assert submit.status_code == 409 and submit.json()["problems"][0]["kind"] == kind


def test_update_carries_state_over(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    old_run, _ = running_job(client, ctx, settings)
    v2 = make_version(client, "j", COUNTS, ENRICH)
    op = operate(client, ctx, "j", "update", {"version": v2, "verify_seconds": 0})
    assert op["state"] == "succeeded", op
    result = op["result"]
    assert result["previous_run_id"] == old_run and result["run_id"] != old_run
    assert client.get(f"{API}/runs/{old_run}").json()["state"] == "stopped"
    new = client.get(f"{API}/runs/{result['run_id']}").json()
    assert new["state"] == "running" and new["version"] == v2
    assert client.get(f"{API}/jobs/j").json()["current_run_id"] == new["id"]
    snapshot = get_snapshot(client, "j", result["snapshot"])
    assert snapshot["stop"] and snapshot["started_runs"][0]["run_id"] == new["id"]
    assert (checkpoint_dir(settings, "j", new["id"]) / "commits" / "2").exists()
    assert (
        client.post(
            f"{API}/jobs/j/update", json={"version": v2, "strategy": "stateless"}
        ).status_code
        == 422
    )


def test_an_update_applies_the_job_s_retention_after_go_out_of_the_pause(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    """Issue 25: retention and the store's garbage collection read every manifest and list
    every blob; an update by snapshot runs them once the new run has its go, not between
    the stop and go. They still run: with ``keep_last: 1`` the earlier snapshot goes."""
    _, ck = running_job(client, ctx, settings)
    assert client.put(f"{API}/jobs/j/snapshot-retention", json={"keep_last": 1}).status_code == 200
    assert operate(client, ctx, "j", "snapshots", {"name": "before"})["state"] == "succeeded"
    ck.batch()
    v2 = make_version(client, "j", COUNTS, ENRICH)
    op = operate(client, ctx, "j", "update", {"version": v2, "verify_seconds": 0})
    assert op["state"] == "succeeded", op
    names = op["steps"]
    assert names.index("export") < names.index("go") < names.index("retention"), names
    assert op["details"]["retention"]["deleted"] == ["before"], op["details"]["retention"]
    left = [s["name"] for s in client.get(f"{API}/snapshots").json()["items"]]
    assert left == [op["result"]["snapshot"]]
    store = SnapshotStore(settings.resolved_snapshot_root)
    assert store.manifests() == [("j", op["result"]["snapshot"])]


def test_a_prewarmed_update_runs_its_dry_run_inside_the_standby(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings, fake: FakeBackend
) -> None:
    """One driver start serves the dry run and the switch: the standby's driver is submitted
    with the scratch copy to check, and no dry-run driver of its own is."""
    old_run, _ = running_job(client, ctx, settings)
    v2 = make_version(client, "j", COUNTS, ENRICH)
    op = operate(client, ctx, "j", "update", {"version": v2, "verify_seconds": 0})
    assert op["state"] == "succeeded", op
    names = op["steps"]
    assert "dry_run_submit" not in names, names
    order = ["dry_run_prepare", "standby", "standby_ready", "dry_run", "request_stop", "go"]
    assert [n for n in names if n in order] == order, names
    standbys = [a.spec for a in fake.apps.values() if a.spec.conf.get(contract.STANDBY_DRY_RUN_DIR)]
    (spec,) = standbys  # the standby's, the one driver of v2
    assert spec.tag == f"tidegate-run-{op['run_id']}-a0"
    scratch = Path(spec.conf[contract.STANDBY_DRY_RUN_DIR])
    assert json.loads(spec.conf["spark.tidegate.dry_run_queries"]) == ["counts"]
    assert spec.conf["spark.tidegate.dry_run_result"] == f"{scratch}/_dryrun.json"
    # Its own checkpoint stays its run's; the scratch copy is gone once judged.
    assert spec.conf["spark.tidegate.checkpoint_dir"].endswith(f"/j/{op['run_id']}")
    assert "spark.tidegate.dry_run" not in spec.conf and not scratch.exists()
    assert client.get(f"{API}/runs/{old_run}").json()["state"] == "stopped"


def _uses(ctx: WorkerContext, run_id: int) -> list[tuple[int, str]]:
    with ctx.factory() as session:
        rows = session.scalars(select(SnapshotUse).where(SnapshotUse.run_id == run_id)).all()
        return sorted((use.snapshot_id, use.query) for use in rows)


def test_go_run_again_after_its_commit_writes_nothing_twice(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings, fake: FakeBackend
) -> None:
    """The step ``go`` commits the switch in one transaction: the standby's go, the snapshots
    its run starts from, the operation's run. A worker killed before the step was recorded
    runs it again: it finds the run gone already and writes nothing more."""
    running_job(client, ctx, settings)
    v2 = make_version(client, "j", COUNTS, ENRICH)
    done = operate(client, ctx, "j", "update", {"version": v2, "verify_seconds": 0})
    assert done["state"] == "succeeded", done
    with ctx.factory() as session:
        op = session.get(Operation, _last_op(ctx))
        assert op is not None
        session.expunge(op)
    recorded = op.step_details()
    uses = _uses(ctx, done["run_id"])
    assert len(uses) == 1, uses  # the snapshot the update saved, for its one query
    again = start.go(ctx, op, done["run_id"], cast(StoredPlan, recorded["plan"]))
    assert again == recorded["go"]
    assert _uses(ctx, done["run_id"]) == uses
    with ctx.factory() as session:
        assert session.get(Operation, op.id).run_id == done["run_id"]  # type: ignore[union-attr]


def test_a_prewarmed_update_restores_the_pre_copy_before_the_stop(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    """Issue 25: while the old run still processes, the pre-copy is restored where the
    standby's checkpoint will be (step ``prestage``); after the stop, ``materialise`` keeps
    those files and restores only what the last batches added, and the checkpoint it leaves
    is exactly the snapshot's."""
    _, ck = running_job(client, ctx, settings)
    v2 = make_version(client, "j", COUNTS, ENRICH)
    op = operate(client, ctx, "j", "update", {"version": v2, "verify_seconds": 0})
    assert op["state"] == "succeeded", op
    names = op["steps"]
    assert names.index("pre_copy") < names.index("prestage") < names.index("request_stop")
    prestaged = op["details"]["prestage"]["counts"]
    assert prestaged["files"] > 0 and prestaged["bytes"] > 0, op["details"]["prestage"]
    restored = op["details"]["materialise"]["queries"]["counts"]
    assert 0 < restored["prestaged_bytes"] <= restored["bytes"], restored
    new = checkpoint_dir(settings, "j", op["run_id"])
    snapshot = get_snapshot(client, "j", op["result"]["snapshot"])
    assert snapshot["state"] == "ready"
    assert (new / "commits" / "2").exists()
    assert not (new / ".counts.tidegate-restoring").exists()
    assert not list(new.parent.glob(".*tidegate*")), list(new.parent.iterdir())
    assert not (new / ".tidegate-prestaged.json").exists()
    # Exactly the snapshot: the files its manifest names, each the old run's, byte for byte
    # (no file of the pre-copy that the snapshot no longer names is left behind).
    manifest = SnapshotStore(settings.resolved_snapshot_root).read_manifest("j", snapshot["name"])
    assert manifest is not None
    named = set(manifest["queries"]["counts"]["files"])
    assert len(named) == restored["files"]
    on_disk = {p.relative_to(new).as_posix() for p in new.rglob("*") if p.is_file()}
    assert on_disk - named == set(), on_disk - named  # the restore's hints kept apart
    assert restored_hints.exists(settings, new)
    assert named - on_disk == set()
    for rel in named:
        assert (new / rel).read_bytes() == (ck.root / rel).read_bytes(), rel


def test_a_prewarmed_update_refused_by_its_dry_run_releases_the_standby(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings, fake: FakeBackend
) -> None:
    """The dry run runs inside the standby; its refusal releases the standby and leaves the
    old run, never asked to stop, running."""
    old_run, _ = running_job(client, ctx, settings)
    v2 = make_version(client, "j", COUNTS, ENRICH)
    fake.dry_run_outcome = {
        "counts": {"ok": False, "error_class": "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE"}
    }
    op = operate(client, ctx, "j", "update", {"version": v2, "verify_seconds": 0})
    assert op["state"] == "failed" and "refused by a dry run" in op["error"], op
    names = op["steps"]
    # (the refusing dry_run step is not recorded: the operation failed in it)
    assert names[-3:] == ["dry_run_prepare", "standby", "standby_ready"], names
    assert "request_stop" not in names
    runs = client.get(f"{API}/jobs/j/runs").json()["items"]
    by_id = {r["id"]: r for r in runs}
    assert by_id[old_run]["state"] == "running"
    (released,) = [r for r in runs if r["id"] != old_run]
    assert released["state"] == "stopped" and released["stop_reason"] == "released", released
    assert released["go_at"] is None
    assert client.get(f"{API}/jobs/j").json()["current_run_id"] == old_run
    assert fake.alive() == [by_id[old_run]["backend_id"]]


def test_a_standby_dry_run_hit_by_spark_infrastructure_is_retried_by_its_own_driver(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings, fake: FakeBackend
) -> None:
    """A "Python worker failed to connect back" proves nothing: the standby is released, a
    dry-run driver of its own tries again, and a second standby takes the switch."""
    old_run, _ = running_job(client, ctx, settings)
    v2 = make_version(client, "j", COUNTS, ENRICH)
    infra = {
        "counts": {
            "ok": False,
            "error_class": "StreamingQueryException",
            "message": "Python worker failed to connect back.",
        }
    }
    fake.dry_run_outcomes = [infra, None]
    op = operate(client, ctx, "j", "update", {"version": v2, "verify_seconds": 0})
    assert op["state"] == "succeeded", op
    names = op["steps"]
    retried = ["dry_run", "cold_dry_run", "dry_run_prepare_2", "dry_run_submit_2", "dry_run_2"]
    assert [n for n in names if n in retried] == retried, names
    after = ["dry_run_2", "standby_2", "standby_ready_2", "request_stop", "go"]
    assert [n for n in names if n in after] == after, names
    assert "create_run" not in names, names
    runs = client.get(f"{API}/jobs/j/runs").json()["items"]
    released = [r for r in runs if r["stop_reason"] == "released"]
    assert len(released) == 1 and released[0]["go_at"] is None, runs
    assert op["run_id"] not in (old_run, released[0]["id"])
    new = client.get(f"{API}/runs/{op['run_id']}").json()
    assert new["state"] == "running" and new["go_at"] is not None


def test_a_job_without_prewarm_updates_cold_unless_the_request_says_otherwise(
    client: TestClient, cluster: str, ctx: WorkerContext, settings: Settings
) -> None:
    old_run, _ = running_job(client, ctx, settings)
    patched = client.patch(f"{API}/jobs/j", json={"prewarm": False})
    assert patched.status_code == 200 and patched.json()["prewarm"] is False, patched.text
    v2 = make_version(client, "j", COUNTS, ENRICH)
    cold = operate(client, ctx, "j", "update", {"version": v2, "verify_seconds": 0})
    assert cold["state"] == "succeeded", cold
    assert "standby" not in cold["steps"] and "create_run" in cold["steps"]
    stated = client.get(f"{API}/operations/{_last_op(ctx)}").json()["params"]
    assert stated["prewarm"] is False  # the operation says what the worker did
    warm = operate(client, ctx, "j", "update", {"version": 1, "verify_seconds": 0, "prewarm": True})
    assert warm["state"] == "succeeded", warm
    assert "standby" in warm["steps"] and "go" in warm["steps"] and old_run != warm["run_id"]


def _last_op(ctx: WorkerContext) -> int:
    from app.operations.models import Operation

    with ctx.factory() as session:
        return int(session.query(Operation.id).order_by(Operation.id.desc()).limit(1).scalar())


def test_failed_update_rolls_back_from_the_same_snapshot(
    client: TestClient,
    cluster: str,
    ctx: WorkerContext,
    settings: Settings,
    fake: FakeBackend,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    running_job(client, ctx, settings)
    v2 = make_version(client, "j", COUNTS, ENRICH)
    status = fake.status

    def failing_v2(backend_id: str) -> AppStatus:
        app = fake.apps.get(backend_id)
        if app is not None and app.spec.conf["spark.tidegate.version"] == str(v2):
            if not app.state.terminal:
                app.state = AppState.FAILED
            return AppStatus(backend_id, AppState.FAILED, "FAILED", "boom: v2 cannot start")
        return status(backend_id)

    monkeypatch.setattr(fake, "status", failing_v2)
    # (dry_run false: a dry run would refuse this v2 before anything stops; the rollback is
    # what is tested here.)
    op = operate(
        client,
        ctx,
        "j",
        "update",
        {"version": v2, "verify_seconds": 0, "dry_run": False, "prewarm": False},
    )
    assert op["state"] == "failed", op
    assert "Rolled back: version 1 runs again from snapshot" in op["error"], op["error"]
    result = op["result"]
    assert result["rolled_back"] is True and result["version"] == 1
    assert "rollback_materialise" in op["steps"] and "rollback_stopped" in op["steps"]
    failed = client.get(f"{API}/runs/{result['failed_run_id']}").json()
    assert failed["state"] == "stopped" and failed["version"] == v2
    back = client.get(f"{API}/runs/{result['run_id']}").json()
    assert back["state"] == "running" and back["version"] == 1
    assert client.get(f"{API}/jobs/j").json()["current_run_id"] == back["id"]
    assert (checkpoint_dir(settings, "j", back["id"]) / "commits" / "2").exists()
