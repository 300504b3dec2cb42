"""The status page's arithmetic: backlog from progress reports, series, sparklines, times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from app.ui.figures import (
    backlog,
    epoch_ms,
    iso,
    job_backlog_series,
    sparkline,
    step_timings,
)


def _report(*sources: tuple[object, object]) -> dict[str, object]:
    return {"sources": [{"end_offset": end, "latest_offset": latest} for end, latest in sources]}


def test_backlog_sums_sources_and_partitions() -> None:
    # the event log: {partition: offset}; a partition new since the batch counts from 0
    assert backlog(_report(({"0": 10, "1": 5}, {"0": 12, "1": 9, "2": 3}))) == 2 + 4 + 3
    # Kafka-style nesting, plus a second source
    assert backlog(_report(({"t": {"0": 1}}, {"t": {"0": 7}}), ({"0": 0}, {"0": 1}))) == 7
    # ahead is not negative backlog; a source without numbers says nothing
    assert backlog(_report(({"0": 9}, {"0": 4}))) == 0
    assert backlog(_report(("x", "y"), (None, {"0": 1}))) is None
    assert backlog(_report((True, 5))) is None
    assert backlog({}) is None and backlog(None) is None


def test_job_series_sums_each_querys_latest_backlog() -> None:
    rows = [
        ("a", _report(({"0": 0}, {"0": 10}))),
        ("b", _report(({"0": 0}, {"0": 5}))),
        ("a", _report(({"0": 10}, {"0": 12}))),
        ("b", {"sources": []}),  # says nothing: b keeps its last known backlog
    ]
    assert job_backlog_series(rows) == [10, 15, 7]


def test_sparkline_scales_to_its_box() -> None:
    line = sparkline([0, 5, 10], width=100, height=20)
    assert line.points == "0.0,18.0 50.0,10.0 100.0,2.0"
    assert (line.last, line.peak, line.count) == (10, 10, 3)
    assert sparkline([]).count == 0 and sparkline([3]).count == 1


def test_times_are_iso_utc() -> None:
    assert iso(datetime(2026, 1, 2, 4, 4, 5, tzinfo=UTC) + timedelta(hours=-1)) == (
        "2026-01-02T03:04:05Z"
    )
    assert iso(None) == "-"
    assert epoch_ms(1795443607000) == "2026-11-23T14:20:07Z"
    assert epoch_ms(1795443607123) == "2026-11-23T14:20:07.123Z"
    assert epoch_ms(None) == "-"


def test_each_step_took_since_the_one_before() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    steps = [
        SimpleNamespace(name="reserve", at=start + timedelta(seconds=1)),
        SimpleNamespace(name="export", at=start + timedelta(seconds=7)),
    ]
    assert [(t.name, t.seconds) for t in step_timings(steps, start)] == [
        ("reserve", 1.0),
        ("export", 6.0),
    ]
    assert step_timings(steps, None)[0].seconds is None
