"""What the status page computes from stored progress reports: backlog, series, sparklines.

Pure functions of the API's own documents, so the page's figures equal the API's."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


def iso(value: datetime | None) -> str:
    """ISO-8601 in UTC to the second, as every time on the page: 2026-11-22T06:00:07Z."""
    if value is None:
        return "-"
    value = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def _behind(latest: Any, end: Any) -> int | None:
    """Records between a source's processed end and its latest offsets: numbers compared
    directly, {partition: offset} maps (nested too, Kafka-style) partition by partition."""
    if isinstance(latest, bool) or isinstance(end, bool):
        return None
    if isinstance(latest, int) and isinstance(end, int):
        return max(latest - end, 0)
    if isinstance(latest, dict) and isinstance(end, dict):
        parts = [_behind(value, end.get(key, 0)) for key, value in latest.items()]
        known = [p for p in parts if p is not None]
        return sum(known) if known else None
    return None


def backlog(payload: dict[str, Any] | None) -> int | None:
    """latestOffset - endOffset per source, summed; None when no source says."""
    if not payload:
        return None
    parts = [
        _behind(s.get("latest_offset"), s.get("end_offset")) for s in payload.get("sources") or []
    ]
    known = [p for p in parts if p is not None]
    return sum(known) if known else None


def job_backlog_series(rows: Iterable[tuple[str, dict[str, Any]]]) -> list[int]:
    """A run's total backlog after each report (oldest first): the sum of every query's
    latest known backlog."""
    latest: dict[str, int] = {}
    series = []
    for query, payload in rows:
        value = backlog(payload)
        if value is not None:
            latest[query] = value
            series.append(sum(latest.values()))
    return series


def batch_duration_ms(payload: dict[str, Any]) -> int | None:
    durations = payload.get("durations_ms") or {}
    value = durations.get("triggerExecution")
    return value if isinstance(value, int) else None


@dataclass(frozen=True)
class Sparkline:
    """An inline SVG polyline of a series, scaled to its own maximum."""

    points: str
    last: int | float | None
    peak: int | float | None
    count: int
    width: int
    height: int


def sparkline(values: Sequence[int | float], width: int = 120, height: int = 24) -> Sparkline:
    if not values:
        return Sparkline("", None, None, 0, width, height)
    peak = max(values)
    low = min(0, min(values))
    span = (peak - low) or 1
    step = width / max(len(values) - 1, 1)
    points = " ".join(
        f"{i * step:.1f},{height - 2 - (v - low) / span * (height - 4):.1f}"
        for i, v in enumerate(values)
    )
    return Sparkline(points, values[-1], peak, len(values), width, height)


@dataclass(frozen=True)
class StepTiming:
    name: str
    at: datetime
    seconds: float | None


def step_timings(steps: Sequence[Any], started_at: datetime | None) -> list[StepTiming]:
    """A step's ``at`` is when it finished: it took from the previous one (or the start)."""
    timings = []
    previous = started_at
    for step in steps:
        seconds = (step.at - previous).total_seconds() if previous else None
        timings.append(StepTiming(step.name, step.at, seconds))
        previous = step.at
    return timings


def epoch_ms(value: Any) -> str:
    """Epoch milliseconds (a TIMESTAMP startpoint) as ISO-8601 UTC."""
    if not isinstance(value, int) or isinstance(value, bool):
        return "-" if value is None else str(value)
    try:
        moment = datetime.fromtimestamp(value / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return str(value)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{value % 1000:03d}Z" if value % 1000 else f"{text}Z"


def human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def state_rows(payload: dict[str, Any]) -> int | None:
    counts = [
        op.get("num_rows_total")
        for op in payload.get("state_operators") or []
        if isinstance(op.get("num_rows_total"), int)
    ]
    return sum(counts) if counts else None


def rows_dropped_late(payload: dict[str, Any]) -> int | None:
    """Rows the batch's stateful operators dropped as behind the watermark (Spark's
    numRowsDroppedByWatermark, summed); None when none says."""
    counts = [
        op.get("num_rows_dropped_by_watermark")
        for op in payload.get("state_operators") or []
        if isinstance(op.get("num_rows_dropped_by_watermark"), int)
    ]
    return sum(counts) if counts else None


def run_rows_dropped_late(progress: dict[str, Any]) -> int | None:
    """Over a run's queries, the rows dropped as late over all its batches (each counted
    once: the API's rows_dropped_late_total); None before any report says."""
    totals = [
        total
        for p in progress.values()
        if isinstance(p, dict) and isinstance(total := p.get("rows_dropped_late_total"), int)
    ]
    return sum(totals) if totals else None
