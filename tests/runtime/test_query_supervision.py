"""Per-query supervision on real Spark: a query that fails is restarted alone by its driver,
after the job's backoff and on its checkpoint, while the driver's other query runs on. The
driver is not restarted (the run stays at attempt 0), the run shows the query's restart and
its error, /metrics counts it, and both outputs are exactly their ground truth. When the
query fails again, a drain does not wait out its backoff: it restarts the query at once and
ends the run with both outputs complete.

On the same run, declared sinks: a version whose declared file sink does not fit the state
it resumes is refused at the request, one whose declared sink the job's code does not write
is refused by its dry run; the running job is not touched either time."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from pipelines.ground_truth import expected_enrich
from tests.operations.test_lifecycle_e2e import _job, _operate
from tests.snapshots.test_snapshots_e2e import _source, _windowed
from tests.support.chaos.harness import committed_files
from tests.support.chaos.windowed import committed_windows, expected_windows
from tests.support.e2e import APPS, SPARK_TEST_CONF
from tests.support.stack import Stack, wait_until
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_producer import produce

pytestmark = pytest.mark.e2e

T0 = 1_767_225_600_000
# Long enough that the other query is seen working while the failed one waits (it catches
# up within seconds), and that a drain ends within twice it: the test waits it out once.
POLICY = {"min_backoff": "25s", "max_backoff": "2m", "max_attempts": 3, "stable_period": "10m"}


def _enriched(out: Path) -> list[tuple[Any, ...]]:
    rows = []
    for path in committed_files(out):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            rows.append((r["partition"], r["offset"], r["key"], r["amount"], r["size"]))
    return sorted(rows)


def _caught_up(stack: Stack, run_id: int, root: Path, query: str) -> bool:
    latest = {str(p): o for p, o in EventLog(root).stream("clicks").latest_offsets().items()}
    progress = stack.run(run_id)["progress"].get(query) or {}
    return bool((progress.get("sources") or [{}])[0].get("end_offset") == latest)


def test_a_failing_query_restarts_alone_and_declared_sinks_are_checked_before_a_stop(
    runner: Stack, tmp_path: Path
) -> None:
    stack, job = runner, "supervised-queries"
    root, out, enrich_out = tmp_path / "log", tmp_path / "out", tmp_path / "enrich"
    EventLog(root).create_stream("clicks", 2)
    produce(str(root), "clicks", 2, rate=0, count=200, start_ts_ms=T0, ts_step_ms=400)
    _job(stack, job, POLICY)
    args = ["--root", str(root), "--stream", "clicks", "--output", str(out)]
    body = {
        "app": {
            "file": str(APPS / "fail_once.py"),
            "args": [
                *args,
                *("--enrich-output", str(enrich_out)),
                *("--fail-marker", str(tmp_path / "failed-once")),
            ],
        },
        "cluster": "runner",
        # One try per task: the batch fails, not just its task.
        "conf": {
            **SPARK_TEST_CONF,
            "spark.sql.session.timeZone": "UTC",
            "spark.task.maxFailures": "1",
        },
        "queries": [
            _windowed(root),
            {"name": "enrich", "sources": [_source(root)], "trigger": "1 SECONDS"},
        ],
    }
    r = stack.client.post(f"/jobs/{job}/versions", json=body)
    assert r.status_code == 201, r.text
    submitted = _operate(stack, job, "submit", {"version": r.json()["number"]})
    assert submitted["state"] == "succeeded", submitted
    run_id = submitted["run_id"]

    failed = wait_until(
        lambda: stack.run(run_id)["query_restarts"].get("enrich") or {},
        lambda e: e.get("restarts") == 1,
        180,
    )
    restart_at = datetime.fromisoformat(failed["next_restart_at"])
    assert "fails one batch on purpose" in failed["last_error"] and not failed["gave_up"]
    # While enrich waits out its backoff, windowed_counts reads what arrives.
    produce(str(root), "clicks", 2, rate=0, count=20, start_ts_ms=T0 + 80_000, ts_step_ms=400)
    wait_until(lambda: _caught_up(stack, run_id, root, "windowed_counts"), bool, 60)
    assert datetime.now(restart_at.tzinfo) < restart_at, "caught up only after enrich restarted"
    assert not _caught_up(stack, run_id, root, "enrich")

    # Then enrich restarts on its checkpoint: the batch it failed in runs again, once.
    produce(str(root), "clicks", 2, rate=0, count=100, start_ts_ms=T0 + 120_000, ts_step_ms=400)
    wait_until(lambda: _caught_up(stack, run_id, root, "enrich"), bool, 120)
    expected = [
        (e.partition, e.offset, e.key, e.amount, e.size) for e in expected_enrich(root, "clicks")
    ]
    wait_until(lambda: _enriched(enrich_out), lambda rows: rows == expected, 60)
    run = stack.run(run_id)
    assert run["state"] == "running" and run["attempt"] == 0 and run["failures"] == 0, run
    assert run["query_restarts"]["enrich"]["restarts"] == 1
    assert "windowed_counts" not in run["query_restarts"]
    metrics = httpx.get(f"{stack.url}/metrics", headers=stack.client.headers, timeout=30).text
    assert f'tidegate_query_restarts_total{{job="{job}",query="enrich"}} 1.0' in metrics

    # Declared sinks, on this run's real checkpoint and output. A version whose windowed query
    # would write to a new, empty folder while resuming its state is refused at the request
    # (its sink log could not compact), before anything stops.
    def declaring(sink: dict[str, Any]) -> int:
        queries = [{**body["queries"][0], "sink": sink}, body["queries"][1]]
        r = stack.client.post(f"/jobs/{job}/versions", json={**body, "queries": queries})
        assert r.status_code == 201, r.text
        return int(r.json()["number"])

    elsewhere = declaring({"format": "parquet", "path": str(tmp_path / "out-new")})
    refused = stack.client.post(f"/jobs/{job}/update", json={"version": elsewhere})
    assert refused.status_code == 409, refused.text
    assert [p["kind"] for p in refused.json()["problems"]] == ["sink_log"]
    # One that declares another format than the job's code writes passes that check (the same
    # folder), and its dry run refuses it: the old run never stopped.
    json_sink = declaring({"format": "json", "path": str(out)})
    update = _operate(stack, job, "update", {"version": json_sink})
    assert update["state"] == "failed", update
    assert "does not write where its version declares" in update["error"], update["error"]
    assert "its format is parquet, not json" in update["error"]
    # Nor does a version without a query the job's code starts (its state would be dropped).
    r = stack.client.post(f"/jobs/{job}/versions", json={**body, "queries": body["queries"][:1]})
    assert r.status_code == 201, r.text
    update = _operate(stack, job, "update", {"version": r.json()["number"]})
    assert update["state"] == "failed", update
    assert "query 'enrich' is not declared by this job version" in update["error"], update
    run = stack.run(run_id)
    assert run["state"] == "running" and run["attempt"] == 0

    # enrich fails again (a new marker to spend), and waits twice the backoff: a drain now
    # restarts it at once rather than after it, and flushes both queries exactly.
    (tmp_path / "failed-once").unlink()
    produce(str(root), "clicks", 2, rate=0, count=20, start_ts_ms=T0 + 200_000, ts_step_ms=400)
    again = wait_until(
        lambda: stack.run(run_id)["query_restarts"]["enrich"],
        lambda e: e["restarts"] == 2 and e["next_restart_at"] is not None,
        120,
    )
    restart_at = datetime.fromisoformat(again["next_restart_at"])
    drained = _operate(stack, job, "drain")
    assert drained["state"] == "succeeded", drained
    assert datetime.fromisoformat(drained["finished_at"]) < restart_at, (drained, again)
    everything = [
        (e.partition, e.offset, e.key, e.amount, e.size) for e in expected_enrich(root, "clicks")
    ]
    assert _enriched(enrich_out) == everything
    assert committed_windows(out) == expected_windows(root, closed_only=False)
    run = stack.run(run_id)
    assert run["attempt"] == 0 and run["query_restarts"]["enrich"]["restarts"] == 2, run
