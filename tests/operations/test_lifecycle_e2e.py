"""tidegate end to end on real Spark: the API, real worker processes, the standalone cluster
and the local Livy-compatible runner, running the example pipelines with the runtime."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pyarrow.dataset as ds
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.devtools.spark_local import LocalStandaloneCluster
from pipelines.ground_truth import expected_enrich, expected_windowed_counts
from tests.support.backends import Target
from tests.support.chaos.harness import enrich_rows
from tests.support.e2e import SPARK_TEST_CONF, app_path
from tests.support.sizes import under_chaos
from tests.support.stack import ROOT, Stack, wait_until
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.driver.channel import ControlClient, ControlPlaneRefused
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_producer import produce

pytestmark = pytest.mark.e2e


def _job(stack: Stack, name: str, policy: dict[str, Any] | None = None) -> None:
    r = stack.client.post("/jobs", json={"name": name, "restart_policy": policy or {}})
    assert r.status_code == 201, r.text


def _windowed_version(
    stack: Stack,
    job: str,
    cluster: str | Target,
    root: Path,
    out: Path,
    max_records_per_batch: int | None = None,
    window: str | None = None,
    conf: dict[str, str] | None = None,
    app_file: str | None = None,
) -> int:
    """Version of the windowed pipeline on ``cluster``: a Target runs the team's copy on the
    bare cluster Python; a cluster name, the checkout's copy (or ``app_file``, a variant of
    it) on the worker's Python. ``conf`` is added to the cluster's."""
    limit = {"maxRecordsPerBatch": str(max_records_per_batch)} if max_records_per_batch else {}
    if isinstance(cluster, Target):
        app_file, conf = cluster.pipeline("windowed_counts.py"), cluster.conf(**(conf or {}))
        cluster = cluster.cluster
    else:
        app_file = app_file or str(ROOT / "pipelines" / "windowed_counts.py")
        conf = {**SPARK_TEST_CONF, "spark.sql.session.timeZone": "UTC", **(conf or {})}
    body = {
        "app": {
            "file": app_file,
            "args": ["--root", str(root), "--stream", "clicks", "--output", str(out)]
            + (["--max-records-per-batch", str(max_records_per_batch)] if limit else [])
            + (["--window", window] if window else []),
        },
        "cluster": cluster,
        "conf": conf,
        "queries": [
            {
                "name": "windowed_counts",
                "sources": [
                    {
                        "name": "clicks",
                        "kind": "eventlog",
                        "options": {"root": str(root), "stream": "clicks", **limit},
                    }
                ],
                "stateful_operators": [{"kind": "tumbling_window"}],
                "output_mode": "append",
                "trigger": "1 SECONDS",
            }
        ],
    }
    r = stack.client.post(f"/jobs/{job}/versions", json=body)
    assert r.status_code == 201, r.text
    number: int = r.json()["number"]
    return number


def _operate(
    stack: Stack, job: str, verb: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    r = stack.client.post(f"/jobs/{job}/{verb}", json=body)
    assert r.status_code == 202, r.text
    return stack.wait_operation(r.json()["id"])


def _output(out: Path) -> list[tuple[Any, ...]]:
    if not out.exists():
        return []
    table = ds.dataset(str(out), format="parquet", exclude_invalid_files=True).to_table()
    rows = table.to_pylist()
    return sorted(
        (int(r["window_start"].timestamp() * 1000), r["key"], r["count"], r["sum"]) for r in rows
    )


def _expected(root: Path) -> list[tuple[Any, ...]]:
    return sorted(
        (w.window_start_ms, w.key, w.count, w.sum) for w in expected_windowed_counts(root, "clicks")
    )


def _first_int(pattern: str, text: str) -> int | None:
    found = re.search(pattern, text)
    return int(found[1]) if found else None


def _page_and_metrics_agree_with_the_api(stack: Stack, job: str, run_id: int, query: str) -> None:
    """The status page and /metrics show this real run's latest batch and backlog as the API
    does (all input read: backlog 0). Read until two API reads agree around them: the driver
    may commit another (no-data) batch meanwhile."""

    def figures() -> dict[str, Any]:
        before = stack.run(run_id)["progress"][query]["batch_id"]
        page = httpx.get(f"{stack.url}/ui/jobs/{job}", headers=stack.client.headers, timeout=30)
        metrics = httpx.get(f"{stack.url}/metrics", headers=stack.client.headers, timeout=30)
        after = stack.run(run_id)["progress"][query]["batch_id"]
        panel = page.text.split(f'data-query="{query}"', 1)[-1]
        samples = {
            (sample.name, sample.labels.get("source", "")): sample.value
            for family in text_string_to_metric_families(metrics.text)
            for sample in family.samples
            if sample.labels.get("job") == job and sample.labels.get("query") == query
        }
        return {
            "api": (before, after),
            "page": (
                _first_int(r"data-batch>(\d+)<", panel),
                _first_int(r"data-backlog>(\d+)<", panel),
            ),
            "metrics": (
                samples.get(("tidegate_query_last_batch_id", "")),
                sum(
                    v
                    for (n, _), v in samples.items()
                    if n == "tidegate_query_source_backlog_records"
                ),
            ),
        }

    wait_until(
        figures,
        lambda f: (
            f["api"][0] == f["api"][1] == f["page"][0] == f["metrics"][0]
            and f["page"][1] == 0
            and f["metrics"][1] == 0
        ),
        60,
    )


# CI runs the lifecycle on the standalone cluster; the runner's submit, progress, stop and
# restart are what every runner scenario in CI starts with.
RUNNER_IN_CI = (
    "test_windowed_pipeline_submit_progress_stop_restart[standalone] (this lifecycle: submit, "
    "progress, page and /metrics, graceful stop, restart, cancel); the runner backend's submit, "
    "progress, stop and restart in tests/startpoints/test_startpoints_e2e.py[runner] and "
    "tests/worker/test_drain_e2e.py[runner]"
)


@pytest.mark.parametrize(
    "backend",
    [pytest.param("runner", marks=under_chaos(RUNNER_IN_CI)), "standalone"],
)
def test_windowed_pipeline_submit_progress_stop_restart(
    clusters: Stack, backend: str, tmp_path: Path
) -> None:
    stack, job = clusters, f"windowed-{backend}"
    root, out = tmp_path / "log", tmp_path / "out"
    EventLog(root).create_stream("clicks", 2)
    start = 1_767_225_600_000  # 2026-01-01T00:00:00Z
    produce(str(root), "clicks", 2, rate=0, count=600, start_ts_ms=start, ts_step_ms=400)
    _job(stack, job)
    version = _windowed_version(stack, job, backend, root, out)

    submit = _operate(stack, job, "submit", {"version": version})
    assert submit["state"] == "succeeded", submit
    run_id = submit["run_id"]
    latest = {str(p): o for p, o in EventLog(root).stream("clicks").latest_offsets().items()}
    run = wait_until(
        lambda: stack.run(run_id),
        lambda r: (
            (r["progress"].get("windowed_counts") or {}).get("sources", [{}])[0].get("end_offset")
            == latest
        ),
        180,
    )
    assert run["state"] == "running" and run["backend_id"] and run["tag"].endswith("-a0")
    assert run["progress"]["windowed_counts"]["state_operators"]
    wait_until(lambda: _output(out), lambda rows: rows == _expected(root), 120)
    _page_and_metrics_agree_with_the_api(stack, job, run_id, "windowed_counts")

    stop = _operate(stack, job, "stop")
    assert stop["state"] == "succeeded", stop
    graceful = next(s for s in stop["steps"] if s["name"] == "graceful_stop")
    assert graceful["detail"]["graceful"] is True, stop["steps"]
    assert stack.run(run_id)["state"] == "stopped"
    checkpoint = stack.checkpoint_root / job / str(run_id) / "windowed_counts"
    assert cp.latest_offsets_batch(checkpoint) == cp.latest_commit_batch(checkpoint)

    # More data, then a restart from the same checkpoint: nothing lost, nothing twice.
    produce(str(root), "clicks", 2, rate=0, count=300, start_ts_ms=start + 240_000, ts_step_ms=400)
    restart = _operate(stack, job, "restart")
    assert restart["state"] == "succeeded", restart
    assert stack.run(run_id)["attempt"] == 1
    wait_until(lambda: _output(out), lambda rows: rows == _expected(root), 180)
    cancel = _operate(stack, job, "cancel")  # kill now, on either backend
    assert cancel["state"] == "succeeded", cancel
    assert stack.run(run_id)["state"] == "cancelled"
    assert stack.client.get(f"/jobs/{job}").json()["state"] == "cancelled"
    events = stack.client.get("/events", params={"job": job}).json()["items"]
    assert [e["action"] for e in events][:4] == [
        "operation.cancel",
        "operation.restart",
        "operation.stop",
        "operation.submit",
    ]


def test_failing_app_restarts_on_schedule_then_fails(clusters: Stack) -> None:
    stack, job = clusters, "fails-at-start"
    _job(stack, job, {"min_backoff": "1s", "max_backoff": "10s", "max_attempts": 2})
    r = stack.client.post(
        f"/jobs/{job}/versions",
        json={
            "app": {"file": app_path("fail.py")},
            "cluster": "runner",
            "conf": SPARK_TEST_CONF,
            "queries": [{"sources": [{"name": "rate", "kind": "rate"}]}],
        },
    )
    assert r.status_code == 201, r.text
    submit = _operate(stack, job, "submit", {"version": 1})
    assert submit["state"] == "failed" and "restarted at" in submit["error"], submit
    run = wait_until(lambda: stack.run(submit["run_id"]), lambda r: r["state"] == "failed", 240)
    assert run["attempt"] == 2 and run["failures"] == 3
    assert "failing at start on purpose" in run["last_error"]
    restarts = [t for t in reversed(run["transitions"]) if t["to_state"] == "restarting"]
    assert [t["reason"].split("; ")[1] for t in restarts] == [
        "restarting in 1s",
        "restarting in 2s",
    ]
    job_body = stack.client.get(f"/jobs/{job}").json()
    assert job_body["state"] == "failed" and job_body["current_run_id"] == run["id"]


@under_chaos(
    "tests/worker/test_worker_kill.py::test_worker_killed_along_a_job_lifecycle (a worker "
    "killed right after a driver was handed to the backend, reconcile:after_backend_submit, "
    "leaves one driver per attempt, the output exact) and tests/backends/test_backends_e2e.py "
    "(the standalone backend finds a driver by its tag)"
)
def test_worker_killed_mid_submit_leaves_exactly_one_driver(
    clusters: Stack, standalone_cluster: LocalStandaloneCluster, tmp_path: Path
) -> None:
    """The stateless enrichment pipeline on the standalone cluster: the worker is killed right
    after the driver was submitted; another worker finishes without a second driver. The
    output equals the ground truth, after a clean stop and a restart from the checkpoint."""
    stack, job = clusters, "sigkill-mid-submit"
    root, out = tmp_path / "log", tmp_path / "out"
    EventLog(root).create_stream("clicks", 2)
    start = 1_767_225_600_000
    produce(str(root), "clicks", 2, rate=0, count=300, start_ts_ms=start, ts_step_ms=400)
    _job(stack, job)
    r = stack.client.post(
        f"/jobs/{job}/versions",
        json={
            "app": {
                "file": str(ROOT / "pipelines" / "enrich.py"),
                "args": ["--root", str(root), "--stream", "clicks", "--output", str(out)],
            },
            "cluster": "standalone",
            "conf": {**SPARK_TEST_CONF, "spark.sql.session.timeZone": "UTC"},
            "queries": [
                {
                    "name": "enrich",
                    "sources": [
                        {
                            "name": "clicks",
                            "kind": "eventlog",
                            "options": {"root": str(root), "stream": "clicks"},
                        }
                    ],
                    "output_mode": "append",
                    "trigger": "1 SECONDS",
                }
            ],
        },
    )
    assert r.status_code == 201, r.text

    def active_drivers() -> list[str]:
        state = httpx.get(standalone_cluster.ui_url + "/json/").json()
        return [d["id"] for d in state.get("activedrivers", [])]

    def expected() -> list[tuple[int, int, float]]:
        return sorted((r.partition, r.offset, r.amount) for r in expected_enrich(root, "clicks"))

    before = set(active_drivers())
    stack.stop_workers()
    doomed = stack.start_worker(TIDEGATE_FAULT_AT="reconcile:after_backend_submit")
    op = stack.client.post(f"/jobs/{job}/submit", json={"version": 1}).json()
    assert doomed.wait(120) == 137  # killed right after the driver was submitted
    assert stack.client.get(f"/operations/{op['id']}").json()["state"] == "running"
    stack.start_worker()
    done = stack.wait_operation(op["id"])
    assert done["state"] == "succeeded", done
    run_id = done["run_id"]
    new = set(active_drivers()) - before
    assert len(new) == 1 and stack.run(run_id)["backend_id"] in new
    wait_until(lambda: enrich_rows(out), lambda rows: rows == expected(), 180)
    # The sink may hold the rows before the driver's progress report reaches the API.
    stack.progress(run_id, "enrich", lambda p: p.get("batch_id", -1) >= 0, 60)

    stop = _operate(stack, job, "stop")
    assert stop["state"] == "succeeded", stop
    checkpoint = stack.checkpoint_root / job / str(run_id) / "enrich"
    assert cp.latest_offsets_batch(checkpoint) == cp.latest_commit_batch(checkpoint)
    produce(str(root), "clicks", 2, rate=0, count=100, start_ts_ms=start + 200_000)
    restart = _operate(stack, job, "restart")
    assert restart["state"] == "succeeded", restart
    wait_until(lambda: enrich_rows(out), lambda rows: rows == expected(), 180)  # none twice
    cancel = _operate(stack, job, "cancel")
    assert cancel["state"] == "succeeded", cancel
    assert stack.run(run_id)["state"] == "cancelled"
    wait_until(active_drivers, lambda ids: set(ids) <= before, 60)  # every attempt gone


def test_runtime_with_a_wrong_token_is_refused_and_says_so(clusters: Stack) -> None:
    client = ControlClient(clusters.url, 1, "tg_not-a-token")
    with pytest.raises(ControlPlaneRefused, match="refused this run's token"):
        client.directives(0)


def _late_figures(stack: Stack, job: str, run_id: int, query: str) -> dict[str, Any]:
    """Rows dropped as late, wherever tidegate shows them: Spark's own per-operator figures
    in every progress report the driver posted, the run's total (GET /runs/{id}), /metrics,
    the status page and `tidegate runs show`."""
    history = stack.client.get(f"/runs/{run_id}/progress", params={"limit": 500}).json()
    spark = sum(
        op.get("num_rows_dropped_by_watermark") or 0
        for h in history
        for op in h["payload"].get("state_operators") or []
    )
    latest = stack.run(run_id)["progress"][query]
    metrics = httpx.get(f"{stack.url}/metrics", headers=stack.client.headers, timeout=30).text
    counter = next(
        (
            s.value
            for family in text_string_to_metric_families(metrics)
            for s in family.samples
            if s.name == "tidegate_query_rows_dropped_late_total"
            and s.labels == {"job": job, "query": query}
        ),
        None,
    )
    page = httpx.get(f"{stack.url}/ui/jobs/{job}", headers=stack.client.headers, timeout=30).text
    panel = page.split(f'data-query="{query}"', 1)[-1]
    env = {
        **os.environ,
        "TIDEGATE_URL": stack.url,
        "TIDEGATE_TOKEN": stack.client.headers["Authorization"].removeprefix("Bearer "),
        "TIDEGATE_LOG_JSON": "false",
        "NO_COLOR": "1",
        "COLUMNS": "400",
    }
    shown = subprocess.run(
        [sys.executable, "-m", "app.cli", "runs", "show", str(run_id)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    return {
        "spark": spark,
        "batches": len(history),
        "api": latest.get("rows_dropped_late_total"),
        "lead": latest.get("watermark_lead_seconds"),
        "metrics": counter,
        "page": _first_int(r"data-dropped-late>(\d+)<", panel),
        "cli": _first_int(r"(\d+) \(last batch", shown),
    }


def test_rows_dropped_late_on_real_spark(clusters: Stack, tmp_path: Path) -> None:
    """A real driver fed records behind its watermark: every place tidegate shows late rows
    shows the number Spark reported in its progress. 20 records a second apart move the
    watermark to T0 + 9 s (10 s delay); 7 more stamped two minutes before T0, each its own key
    (a partial aggregation would merge rows of one key and window), are all behind it."""
    stack, job, query = clusters, "late-rows", "windowed_counts"
    root, out = tmp_path / "log", tmp_path / "out"
    EventLog(root).create_stream("clicks", 1)
    t0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
    produce(str(root), "clicks", 1, rate=0, count=20, start_ts_ms=t0, ts_step_ms=1000)
    _job(stack, job, {"enabled": False})
    version = _windowed_version(stack, job, "runner", root, out)
    submit = _operate(stack, job, "submit", {"version": version})
    assert submit["state"] == "succeeded", submit
    run_id = submit["run_id"]
    wait_until(
        lambda: stack.run(run_id)["progress"].get(query) or {},
        lambda p: p.get("watermark") == "2026-01-01T00:00:09.000Z",
        180,
    )
    assert _late_figures(stack, job, run_id, query)["metrics"] == 0  # present before any drop

    late_keys = [f"late-{i}" for i in range(7)]
    produce(str(root), "clicks", 1, rate=0, count=7, start_ts_ms=t0 - 120_000, keys=late_keys)
    figures = wait_until(
        lambda: _late_figures(stack, job, run_id, query),
        lambda f: f["spark"] > 0 and f["api"] == f["metrics"] == f["page"] == f["cli"],
        180,
    )
    assert figures["spark"] == figures["api"] == 7, figures
    assert figures["lead"] is not None and figures["lead"] < 0, figures  # far behind the clock
    # tidegate verify: the batches that read the 7 late records counted all 7 in (the
    # checkpoint's offsets agree with Spark's numInputRows) and dropped all 7 as late.
    account = stack.client.get(f"/runs/{run_id}/accounting").json()
    [counted] = account["queries"]
    assert (counted["dropped_late"], counted["not_counted"]) == (7, 0), account
    late_batches = [b for b in counted["batches"] if b["dropped_late"]]
    assert sum(b["read"] for b in late_batches) == 7, late_batches
    assert sum(b["counted_in"] for b in late_batches) == 7, late_batches
    assert account["complete"] is False and "7 rows dropped as late" in account["verdict"]
    cancel = _operate(stack, job, "cancel")
    assert cancel["state"] == "succeeded", cancel
