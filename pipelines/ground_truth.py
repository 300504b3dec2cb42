"""Expected outputs of the example pipelines, computed in plain Python from the log.

Independent of Spark on purpose: correctness tests compare a streaming run (with restarts,
startpoints, drains) against these. They assume no record arrived behind the watermark,
which holds for the generator's increasing event times when batches read every partition.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from tidegate_runtime.eventlog import EventLog, Record
from tidegate_runtime.source import DRAIN_MARKER_TIMESTAMP

# Mirror pipelines.windowed_counts.WINDOW / WATERMARK_DELAY and pipelines.enrich.
WINDOW_MS = 60_000
WATERMARK_DELAY_MS = 10_000
MIN_AMOUNT = 10.0
LARGE_AMOUNT = 50.0
DRAIN_MARKER_MS = int(DRAIN_MARKER_TIMESTAMP.timestamp() * 1000)


@dataclass(frozen=True, order=True)
class WindowCount:
    window_start_ms: int
    window_end_ms: int
    key: str
    count: int
    sum: float | None


class Enriched(NamedTuple):
    partition: int
    offset: int
    event_time_ms: int
    key: str
    amount: float
    size: str


def log_records(
    root: str | os.PathLike[str], stream: str, ranges: dict[int, tuple[int, int]] | None = None
) -> Iterator[tuple[int, Record]]:
    """(partition, record) pairs of ``ranges`` ({partition: (start, end)}; default: all)."""
    log = EventLog(root).stream(stream)
    if ranges is None:
        latest = log.latest_offsets()
        ranges = {p: (start, latest[p]) for p, start in log.earliest_offsets().items()}
    for partition, (start, end) in sorted(ranges.items()):
        for record in log.scan(partition, start, end):
            yield partition, record


def _number(value: str) -> float | None:
    """``TRY_CAST(value AS DOUBLE)`` for the values the generator writes (None if not numeric)."""
    try:
        return float(value)
    except ValueError:
        return None


def expected_windowed_counts(
    root: str | os.PathLike[str],
    stream: str,
    ranges: dict[int, tuple[int, int]] | None = None,
    *,
    window_ms: int = WINDOW_MS,
    watermark_delay_ms: int = WATERMARK_DELAY_MS,
    closed_only: bool = True,
) -> list[WindowCount]:
    """Windows of ``build_windowed_counts``, sorted; with ``closed_only`` only those an
    append-mode run has emitted once it saw all records (end <= max event time - delay).
    Drain markers are not counted; with one in the log every window is closed."""
    groups: dict[tuple[int, str], tuple[int, float | None]] = {}
    max_ts: int | None = None
    for _, record in log_records(root, stream, ranges):
        ts = record.timestamp_ms
        max_ts = ts if max_ts is None else max(max_ts, ts)
        if ts >= DRAIN_MARKER_MS:
            continue
        start = ts - ts % window_ms
        count, total = groups.get((start, record.key), (0, None))
        amount = _number(record.value)
        if amount is not None:
            total = amount if total is None else total + amount
        groups[(start, record.key)] = (count + 1, total)
    watermark = -math.inf if max_ts is None else max_ts - watermark_delay_ms
    return sorted(
        WindowCount(start, start + window_ms, key, count, total)
        for (start, key), (count, total) in groups.items()
        if not closed_only or start + window_ms <= watermark
    )


def expected_enrich(
    root: str | os.PathLike[str], stream: str, ranges: dict[int, tuple[int, int]] | None = None
) -> list[Enriched]:
    """Rows of ``build_enrich``, sorted by (partition, offset)."""
    rows = []
    for partition, record in log_records(root, stream, ranges):
        amount = _number(record.value)
        if amount is None or math.isnan(amount) or amount < MIN_AMOUNT:
            continue
        size = "large" if amount >= LARGE_AMOUNT else "small"
        rows.append(
            Enriched(partition, record.offset, record.timestamp_ms, record.key, amount, size)
        )
    return rows


class Deduplicated(NamedTuple):
    event_id: str
    event_time_ms: int
    value: str


def expected_deduplicated(
    root: str | os.PathLike[str], stream: str, ranges: dict[int, tuple[int, int]] | None = None
) -> list[Deduplicated]:
    """Rows of ``build_deduplicated``, sorted: each event id once. (Every retry of an event is
    within the watermark delay of its first copy: ``events_with_retries`` appends it next.)"""
    seen: dict[str, Deduplicated] = {}
    for _, record in log_records(root, stream, ranges):
        if record.timestamp_ms < DRAIN_MARKER_MS:
            seen.setdefault(record.key, Deduplicated(record.key, record.timestamp_ms, record.value))
    return sorted(seen.values())


def expected_key_totals(
    root: str | os.PathLike[str], stream: str, ranges: dict[int, tuple[int, int]] | None = None
) -> dict[str, tuple[int, int, int]]:
    """``build_totals`` read back as ``key_totals.current_totals`` says: {key: (events, sum of
    the numeric values, latest event time in ms)}. (Whole numbers are summed, anything else adds 0:
    the generators write whole numbers, and a test adds a word.)"""
    totals: dict[str, tuple[int, int, int]] = {}
    for _, record in log_records(root, stream, ranges):
        if record.timestamp_ms >= DRAIN_MARKER_MS:
            continue
        whole = record.value.strip().removeprefix("-").isdigit()
        count, total, last = totals.get(record.key, (0, 0, record.timestamp_ms))
        totals[record.key] = (
            count + 1,
            total + (int(record.value) if whole else 0),
            max(last, record.timestamp_ms),
        )
    return totals
