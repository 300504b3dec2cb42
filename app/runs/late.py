"""Late data: rows Spark's stateful operators drop because their event time is behind the
watermark, and the watermark against the driver's clock. Pure functions of a progress report,
so each is tested without a database (docs/late-data.md)."""

from __future__ import annotations

from typing import Any

from app.core.durations import epoch


def rows_dropped(operators: list[dict[str, Any]] | None) -> int | None:
    """Spark's numRowsDroppedByWatermark summed over a batch's stateful operators; None when
    none reports it (no stateful operator, or a runtime older than the field)."""
    values = [
        v
        for op in operators or []
        if isinstance(v := op.get("num_rows_dropped_by_watermark"), int) and not isinstance(v, bool)
    ]
    return sum(values) if values else None


def watermark_lead_seconds(watermark: Any, timestamp: Any) -> float | None:
    """The watermark minus the driver's clock when the batch started (Spark's progress
    ``timestamp``): positive when the watermark runs ahead of the clock (event times from the
    future: a producer's clock), negative when it lags. None before the first watermark
    (Spark reports the epoch until then) or without a timestamp."""
    mark, clock = epoch(watermark), epoch(timestamp)
    if not mark or clock is None:
        return None
    return round(mark - clock, 3)


def count_batch(
    entry: dict[str, Any] | None, batch_id: int, dropped: int | None
) -> dict[str, Any] | None:
    """A query's late-row tally on its run after a batch's report: each batch id counted once,
    so a batch reported twice (a retried post, a driver restarted after it reported) does not
    count twice. Batch ids only grow within a run's checkpoint; a report of a batch at or
    below the last one counted is that batch again. None while nothing was dropped."""
    if not dropped:
        return entry
    if entry is not None and batch_id <= int(entry.get("batch_id", -1)):
        return entry
    rows = int((entry or {}).get("rows", 0)) + dropped
    return {"rows": rows, "batch_id": batch_id}


def annotate(payload: dict[str, Any], entry: dict[str, Any] | None) -> dict[str, Any]:
    """The figures kept with a query's progress: this batch's late rows, the run's total for
    the query, and the watermark's lead over the driver's clock."""
    return {
        **payload,
        "rows_dropped_late": rows_dropped(payload.get("state_operators")),
        "rows_dropped_late_total": int((entry or {}).get("rows", 0)),
        "watermark_lead_seconds": watermark_lead_seconds(
            payload.get("watermark"), payload.get("timestamp")
        ),
    }
