"""/metrics: the store's figures, read at scrape time (runs, queries, operations, workers)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine

from app.core import run_states as states
from app.core.config import Settings
from app.core.db import make_sessionmaker, transaction
from app.runs import service as runs
from app.runs.service import get_run, transition
from app.worker.core.context import WorkerContext
from app.worker.loop import Worker
from tests.support.api import make_current_run, version_body


def scrape(client: TestClient) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    r = client.get("/metrics")
    assert r.status_code == 200, r.text
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }


def value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str):
    return samples.get((name, frozenset(labels.items())))


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def test_query_figures_come_from_the_latest_progress(client: TestClient, db: Engine) -> None:
    client.post("/api/v1/clusters", json={"name": "local", "kind": "livy", "url": "http://x:9"})
    client.post("/api/v1/jobs", json={"name": "j"})
    client.post("/api/v1/jobs/j/versions", json=version_body())
    run_id, token = make_current_run(db, "j")
    now = datetime.now(UTC)
    auth = {"Authorization": f"Bearer {token}"}
    for batch, started in ((4, now - timedelta(seconds=20)), (5, now - timedelta(seconds=10))):
        report = {
            "query": "events",
            "batch_id": batch,
            "timestamp": _iso(started),
            "num_input_rows": 200,
            "watermark": _iso(now - timedelta(seconds=90)),
            "sources": [
                {
                    "description": "eventlog",
                    "end_offset": {"0": 50, "1": 30},
                    "latest_offset": {"0": 80, "1": 31},
                }
            ],
            "state_operators": [
                {
                    "num_rows_total": 5,
                    "memory_used_bytes": 1000,
                    "custom_metrics": {
                        "numRowsReadDuringEviction": 5,
                        "rocksdbLoadLatencyMs": 1500,
                    },
                },
                {"num_rows_total": 2, "memory_used_bytes": 24},
            ],
            "durations_ms": {"triggerExecution": 4000},
        }
        r = client.post(f"/api/v1/runs/{run_id}/progress", headers=auth, json=report)
        assert r.status_code < 300, r.text

    m = scrape(client)
    q = {"job": "j", "query": "events"}
    assert value(m, "tidegate_job_state", job="j", state="running") == 1
    assert value(m, "tidegate_query_last_batch_id", **q) == 5
    assert value(m, "tidegate_query_batch_duration_seconds", **q) == 4.0
    assert value(m, "tidegate_query_processed_rows_per_second", **q) == 50.0
    assert value(m, "tidegate_query_input_rows_per_second", **q) == 20.0  # 200 rows in 10 s
    assert value(m, "tidegate_query_source_backlog_records", **q, source="events") == 31
    assert value(m, "tidegate_query_state_rows", **q) == 7
    assert value(m, "tidegate_query_state_bytes", **q) == 1024
    assert value(m, "tidegate_query_state_rows_read_to_evict", **q) == 5  # one operator's
    assert value(m, "tidegate_query_trigger_interval_seconds", **q) == 15
    assert 90 <= value(m, "tidegate_query_watermark_delay_seconds", **q) < 150
    assert 0 <= value(m, "tidegate_query_last_progress_age_seconds", **q) < 60
    assert value(m, "tidegate_metrics_store_up") == 1
    # The HTTP metrics are still there.
    assert any(name == "tidegate_http_requests_total" for name, _ in m)


def test_restarts_and_failures_count_stored_transitions(client: TestClient, db: Engine) -> None:
    client.post("/api/v1/clusters", json={"name": "local", "kind": "livy", "url": "http://x:9"})
    client.post("/api/v1/jobs", json={"name": "j"})
    client.post("/api/v1/jobs/j/versions", json=version_body())
    m = scrape(client)
    assert value(m, "tidegate_job_state", job="j", state="idle") == 1
    assert value(m, "tidegate_run_restarts_total", job="j") == 0  # present before the first
    run_id, _ = make_current_run(db, "j")
    factory = make_sessionmaker(db)
    soon = datetime.now(UTC) + timedelta(seconds=300)
    for to, fields in (
        (states.RESTARTING, {"next_restart_at": soon}),
        (states.SUBMITTING, {"attempt": 1, "next_restart_at": None}),
        (states.RUNNING, {}),
        (states.RESTARTING, {"next_restart_at": soon}),
    ):
        with transaction(factory) as session:
            transition(session, get_run(session, run_id), to, **fields)
    m = scrape(client)
    assert value(m, "tidegate_run_restarts_total", job="j") == 1
    assert value(m, "tidegate_run_failures_total", job="j") == 2
    assert value(m, "tidegate_job_state", job="j", state="restarting") == 1
    assert value(m, "tidegate_job_state", job="j", state="running") is None
    assert 250 < value(m, "tidegate_run_restart_in_seconds", job="j") <= 300
    assert value(m, "tidegate_run_attempt", job="j") == 1
    with transaction(factory) as session:
        transition(session, get_run(session, run_id), states.FAILED)
    m = scrape(client)
    assert value(m, "tidegate_run_failures_total", job="j") == 3
    assert value(m, "tidegate_job_state", job="j", state="failed") == 1


def test_standby_drivers_show_per_job_until_go(
    client: TestClient, db: Engine, cluster: str
) -> None:
    client.post("/api/v1/jobs", json={"name": "j"})
    client.post("/api/v1/jobs/j/versions", json=version_body())
    run_id, _ = make_current_run(db, "j")
    factory = make_sessionmaker(db)
    with transaction(factory) as session:
        old = get_run(session, run_id)
        transition(session, old, states.RUNNING)
        warm = runs.create_standby(session, old.job, old.version, created_by="t", operation_id=1)
        warm_id = warm.id
    m = scrape(client)
    assert value(m, "tidegate_job_standby_drivers", job="j", ready="false") == 1
    assert value(m, "tidegate_job_standby_drivers", job="j", ready="true") == 0
    with transaction(factory) as session:
        runs.standby_ready(session, get_run(session, warm_id))
    m = scrape(client)
    assert value(m, "tidegate_job_standby_drivers", job="j", ready="true") == 1
    assert value(m, "tidegate_job_state", job="j", state="running") == 1  # still the old run's
    with transaction(factory) as session:
        transition(session, get_run(session, run_id), states.STOPPING)
        transition(session, get_run(session, run_id), states.STOPPED)
        runs.go(session, warm_id, reason="test")
    m = scrape(client)
    assert value(m, "tidegate_job_standby_drivers", job="j", ready="true") is None
    assert value(m, "tidegate_run_attempt", job="j") == 0


def test_operations_and_workers(client: TestClient, db: Engine, settings: Settings) -> None:
    client.post("/api/v1/clusters", json={"name": "local", "kind": "livy", "url": "http://x:9"})
    client.post("/api/v1/jobs", json={"name": "j"})
    client.post("/api/v1/jobs/j/versions", json=version_body())
    m = scrape(client)
    assert value(m, "tidegate_workers_live") == 0
    assert value(m, "tidegate_operations_started_total", kind="submit") == 0
    assert value(m, "tidegate_operations_finished_total", kind="submit", outcome="failed") == 0
    assert client.post("/api/v1/jobs/j/submit", json={"version": 1}).status_code == 202
    m = scrape(client)
    assert value(m, "tidegate_operations", kind="submit", state="pending") == 1
    assert value(m, "tidegate_operation_oldest_pending_age_seconds", kind="submit") >= 0

    worker = Worker(WorkerContext(make_sessionmaker(db), settings, "w-1", lease_seconds=30))
    worker.beat(renewed=2)
    worker.beat(renewed=1)
    m = scrape(client)
    assert value(m, "tidegate_workers_live") == 1
    assert value(m, "tidegate_worker_lease_renewals_total") == 3
    assert 0 <= value(m, "tidegate_worker_heartbeat_age_seconds") < 30
    worker.mark_stopped()
    m = scrape(client)
    assert value(m, "tidegate_workers_live") == 0
    assert value(m, "tidegate_worker_lease_renewals_total") == 3  # a counter: never down


def test_the_fast_rendering_equals_prometheus_client_s(client: TestClient, db: Engine) -> None:
    """app.metrics.render writes what prometheus_client's generate_latest writes, label values
    with quotes, backslashes and newlines included."""
    from prometheus_client import generate_latest

    from app.metrics import render

    client.post("/api/v1/clusters", json={"name": "local", "kind": "livy", "url": "http://x:9"})
    client.post("/api/v1/jobs", json={"name": "j"})
    client.post("/api/v1/jobs/j/versions", json=version_body())
    make_current_run(db, "j")
    registry = client.app.state.metrics_registry  # type: ignore[attr-defined]
    families = list(registry.collect())
    odd = GaugeMetricFamily("tidegate_odd", 'a "doc" \\ with\nnewline', labels=["job"])
    odd.add_metric(['a"b\\c\nd'], 1.5)
    families.append(odd)

    class Fixed:
        def collect(self) -> list[Metric]:
            return families

    expected = generate_latest(Fixed())  # type: ignore[arg-type]
    # generate_latest sorts label names; ours keep declaration order, which is sorted here.
    assert sorted(render(families).decode().splitlines()) == sorted(expected.decode().splitlines())
