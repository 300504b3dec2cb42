"""Late data (app/runs/late.py, docs/late-data.md): rows Spark drops as behind the watermark,
counted once per batch and kept with the run's progress; the watermark against the driver's
clock. Pure functions, then through the runtime channel and /metrics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine

from app.metrics.progress import figures
from app.runs import late
from tests.support.api import make_current_run, version_body
from tidegate_runtime.driver.channel import progress_report


def test_rows_dropped_sum_over_operators_and_none_when_none_says() -> None:
    ops = [
        {"num_rows_dropped_by_watermark": 3},
        {"num_rows_dropped_by_watermark": 0},
        {"num_rows_total": 5},
    ]
    assert late.rows_dropped(ops) == 3
    assert late.rows_dropped([{"num_rows_total": 5}]) is None
    assert late.rows_dropped([]) is None and late.rows_dropped(None) is None


def test_each_batch_counts_once() -> None:
    entry = late.count_batch(None, 4, 0)
    assert entry is None  # nothing dropped: no tally yet
    entry = late.count_batch(entry, 5, 7)
    assert entry == {"rows": 7, "batch_id": 5}
    assert late.count_batch(entry, 5, 7) is entry  # the same batch reported again
    assert late.count_batch(entry, 3, 2) is entry  # an earlier batch: already seen
    assert late.count_batch(entry, 6, None) is entry
    assert late.count_batch(entry, 6, 2) == {"rows": 9, "batch_id": 6}


def test_watermark_lead_against_the_drivers_clock() -> None:
    ts = "2026-12-07T10:00:00.000Z"
    assert late.watermark_lead_seconds("2026-12-07T10:01:10.000Z", ts) == 70.0
    assert late.watermark_lead_seconds("2026-12-07T09:59:50.000Z", ts) == -10.0
    assert late.watermark_lead_seconds("1970-01-01T00:00:00.000Z", ts) is None  # none yet
    assert late.watermark_lead_seconds(None, ts) is None
    assert late.watermark_lead_seconds("2026-12-07T10:00:00Z", None) is None


def test_the_gauge_follows_the_drivers_clock_since_the_batch() -> None:
    base = datetime(2026, 12, 7, 10, tzinfo=UTC).timestamp()
    report = {
        "batch_id": 2,
        "timestamp": "2026-12-07T10:00:00.000Z",
        "watermark": "2026-12-07T10:01:10.000Z",
        "durations_ms": {"triggerExecution": 2000},
    }
    # Received 2 s after the batch started (its duration); 8 s later on this host, whose
    # clock runs an hour ahead of the driver's: the lead is 70 - 2 - 8, the skew is not seen.
    received = base + 3600 + 2
    fig = figures(
        report,
        [],
        now=received + 8,
        last_report_at=received,
        previous_timestamp=None,
        running_since=None,
    )
    assert fig.watermark_lead_seconds == 60.0


def test_the_runtime_reports_what_spark_dropped() -> None:
    spark_progress = {
        "batchId": 3,
        "timestamp": "2026-12-07T10:00:00.000Z",
        "numInputRows": 9,
        "eventTime": {"watermark": "2026-12-07T10:01:10.000Z"},
        "stateOperators": [
            {"operatorName": "stateStoreSave", "numRowsTotal": 4, "numRowsDroppedByWatermark": 6},
            {"operatorName": "dedupe", "numRowsTotal": 1, "numRowsDroppedByWatermark": 1},
            {"operatorName": "old", "numRowsTotal": 1},
        ],
    }
    report = progress_report("q", spark_progress)
    assert [op["num_rows_dropped_by_watermark"] for op in report["state_operators"]] == [6, 1, None]
    assert report["watermark"] == "2026-12-07T10:01:10.000Z"


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _report(batch: int, dropped: list[int | None], *, lead_s: float = -10.0) -> dict[str, object]:
    now = datetime.now(UTC)
    return {
        "query": "events",
        "batch_id": batch,
        "timestamp": _iso(now),
        "num_input_rows": 10,
        "watermark": _iso(now + timedelta(seconds=lead_s)),
        "state_operators": [
            {"operator_name": f"op{i}", "num_rows_total": 1, "num_rows_dropped_by_watermark": d}
            for i, d in enumerate(dropped)
        ],
        "durations_ms": {"triggerExecution": 100},
    }


def _dropped_total(client: TestClient) -> float | None:
    text = client.get("/metrics").text
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "tidegate_query_rows_dropped_late_total" and s.labels == {
                "job": "j",
                "query": "events",
            }:
                return s.value
    return None


def _lead(client: TestClient) -> float | None:
    for family in text_string_to_metric_families(client.get("/metrics").text):
        for s in family.samples:
            if s.name == "tidegate_query_watermark_lead_seconds":
                return s.value
    return None


def test_a_batch_reported_twice_counts_once_in_the_run_and_in_metrics(
    client: TestClient, db: Engine
) -> None:
    client.post("/api/v1/clusters", json={"name": "local", "kind": "livy", "url": "http://x:9"})
    client.post("/api/v1/jobs", json={"name": "j"})
    client.post("/api/v1/jobs/j/versions", json=version_body())
    run_id, token = make_current_run(db, "j")
    auth = {"Authorization": f"Bearer {token}"}

    def post(report: dict[str, object]) -> None:
        r = client.post(f"/api/v1/runs/{run_id}/progress", headers=auth, json=report)
        assert r.status_code < 300, r.text

    post(_report(1, [None]))  # a runtime that does not say: nothing counted, present at 0
    assert _dropped_total(client) == 0
    progress = client.get(f"/api/v1/runs/{run_id}").json()["progress"]["events"]
    assert progress["rows_dropped_late"] is None and progress["rows_dropped_late_total"] == 0
    post(_report(2, [5, 2]))
    post(_report(2, [5, 2]))  # reported twice (a retried post, a restarted driver)
    post(_report(3, [0, 0]))
    post(_report(4, [1, 0], lead_s=70))
    progress = client.get(f"/api/v1/runs/{run_id}").json()["progress"]["events"]
    assert progress["rows_dropped_late"] == 1
    assert progress["rows_dropped_late_total"] == 8
    assert 69 <= progress["watermark_lead_seconds"] <= 71
    assert _dropped_total(client) == 8
    assert 60 <= (_lead(client) or 0) <= 71
    history = client.get(f"/api/v1/runs/{run_id}/progress").json()
    assert [h["payload"]["rows_dropped_late_total"] for h in history] == [8, 7, 7, 7, 0]
    assert [h["payload"]["rows_dropped_late"] for h in history] == [1, 0, 7, 7, None]
