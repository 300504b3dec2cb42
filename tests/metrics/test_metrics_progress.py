"""app.metrics.progress: a query's figures from its latest progress report."""

from __future__ import annotations

from app.metrics.progress import backlog_records, figures

EVENTS = [{"name": "events", "kind": "eventlog"}]


def test_backlog_sums_every_partition_and_nested_offsets() -> None:
    assert backlog_records({"0": 10, "1": 5, "2": 3}, {"0": 4, "1": 5}) == 9  # new partition: 3
    assert backlog_records({"t": {"0": 9, "1": 1}}, {"t": {"0": 2, "1": 1}}) == 7  # Kafka-style
    assert backlog_records({"0": 1}, {"0": 5}) == 0  # never negative
    assert backlog_records(None, {"0": 1}) is None


def test_only_record_offsets_make_a_backlog() -> None:
    report = {
        "batch_id": 3,
        "sources": [{"latest_offset": {"logOffset": 9}, "end_offset": {"logOffset": 2}}],
    }
    files = figures(
        report,
        [{"name": "in", "kind": "file"}],
        now=100.0,
        last_report_at=99.0,
        previous_timestamp=None,
        running_since=None,
    )
    assert files.backlog == {}  # a file source's offsets count files, not records
    assert files.last_progress_age_seconds == 1.0


def test_no_watermark_yet_and_no_report_yet() -> None:
    first = figures(
        {"batch_id": 0, "watermark": "1970-01-01T00:00:00.000Z", "sources": []},
        EVENTS,
        now=1000.0,
        last_report_at=990.0,
        previous_timestamp=None,
        running_since=900.0,
    )
    assert first.watermark_delay_seconds is None and first.input_rows_per_second is None
    before = figures(
        None, EVENTS, now=1000.0, last_report_at=None, previous_timestamp=None, running_since=940.0
    )
    assert before.batch_id is None and before.last_progress_age_seconds == 60.0
    idle = figures(
        {"batch_id": 4, "idle_at": "1970-01-01T00:16:35+00:00"},
        EVENTS,
        now=1000.0,
        last_report_at=900.0,
        previous_timestamp=None,
        running_since=None,
    )
    assert idle.last_progress_age_seconds == 5.0  # an idle event is progress
