"""Figures of one query from the latest progress report the store keeps (the payload of
``runs.progress[query]``): pure functions, so each is tested without a database."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.core.durations import epoch

# Source kinds whose offsets count records (partition -> offset): backlog is exact for them.
RECORD_OFFSET_KINDS = frozenset({"eventlog", "kafka"})


@dataclass
class QueryFigures:
    batch_id: float | None = None
    batch_seconds: float | None = None
    input_rows_per_second: float | None = None
    processed_rows_per_second: float | None = None
    watermark_delay_seconds: float | None = None
    watermark_lead_seconds: float | None = None
    state_rows: float | None = None
    state_bytes: float | None = None
    state_rows_read_to_evict: float | None = None
    last_progress_age_seconds: float | None = None
    backlog: dict[str, float] = field(default_factory=dict)


def _leaves(value: Any, prefix: str = "") -> dict[str, float]:
    """Numeric leaves of an offset (``{"0": 12}``, Kafka's ``{"topic": {"0": 12}}``)."""
    if isinstance(value, dict) and all(type(v) is int for v in value.values()):
        return {f"{prefix}/{k}": v for k, v in value.items()}  # the event log's: one level
    if isinstance(value, bool):
        return {}
    if isinstance(value, int | float):
        return {prefix: float(value)}
    if isinstance(value, dict):
        out: dict[str, float] = {}
        for key, sub in value.items():
            out.update(_leaves(sub, f"{prefix}/{key}"))
        return out
    return {}


def backlog_records(latest_offset: Any, end_offset: Any) -> float | None:
    """Records behind the latest offsets: Σ over partitions of latest - end (a partition the
    query has not read yet counts from 0)."""
    latest, end = _leaves(latest_offset), _leaves(end_offset)
    if not latest:
        return None
    return sum(max(0.0, offset - end.get(key, 0.0)) for key, offset in latest.items())


def source_names(declared: list[dict[str, Any]], reported: int) -> list[tuple[str, str | None]]:
    """(name, kind) for each reported source. Spark reports a query's sources in plan order,
    which is the declared order for the single-source queries tidegate runs; when the counts
    differ the position names it."""
    if len(declared) == reported:
        return [(str(s.get("name")), s.get("kind")) for s in declared]
    return [(f"source{i}", None) for i in range(reported)]


def _custom_sum(operators: list[dict[str, Any]], name: str) -> float | None:
    """A custom metric summed over the operators that report it (None when none does)."""
    values = [
        v
        for op in operators
        if isinstance(v := (op.get("custom_metrics") or {}).get(name), int | float)
    ]
    return float(sum(values)) if values else None


def driver_clock(
    started: float | None, trigger_ms: Any, last_report_at: float | None, now: float
) -> float | None:
    """The driver's clock now, from its own: the last batch started at ``started`` on it, ran
    ``trigger_ms``, and its report reached the store at ``last_report_at`` (this clock);
    the time since passed on both. So a skew between the driver's and this host's clocks
    does not move the watermark's lead."""
    if started is None:
        return None
    took = trigger_ms / 1000 if isinstance(trigger_ms, int | float) else 0.0
    since = max(0.0, now - last_report_at) if last_report_at is not None else 0.0
    return started + took + since


def figures(
    latest: dict[str, Any] | None,
    declared_sources: list[dict[str, Any]],
    *,
    now: float,
    last_report_at: float | None,
    previous_timestamp: str | None,
    running_since: float | None,
) -> QueryFigures:
    """What /metrics says of one query: ``latest`` is its latest progress report (None before
    the first), ``last_report_at`` when the store received it, ``previous_timestamp`` the
    Spark timestamp of the report before it (for the input rate, as Spark computes it)."""
    out = QueryFigures()
    latest = latest or {}
    seen = [t for t in (last_report_at, epoch(latest.get("idle_at"))) if t is not None]
    since = max(seen) if seen else running_since
    if since is not None:
        out.last_progress_age_seconds = max(0.0, now - since)
    if latest.get("batch_id") is None:
        return out
    out.batch_id = float(latest["batch_id"])
    durations = latest.get("durations_ms") or {}
    rows = latest.get("num_input_rows")
    trigger_ms = durations.get("triggerExecution")
    if isinstance(trigger_ms, int | float):
        out.batch_seconds = trigger_ms / 1000
        if isinstance(rows, int) and trigger_ms > 0:
            out.processed_rows_per_second = rows / (trigger_ms / 1000)
    started, before = epoch(latest.get("timestamp")), epoch(previous_timestamp)
    if isinstance(rows, int) and started is not None and before is not None and started > before:
        out.input_rows_per_second = rows / (started - before)
    watermark = epoch(latest.get("watermark"))
    if watermark:  # Spark reports the epoch (0) until the first watermark is known
        out.watermark_delay_seconds = max(0.0, now - watermark)
        driver_now = driver_clock(started, trigger_ms, last_report_at, now)
        if driver_now is not None:
            out.watermark_lead_seconds = watermark - driver_now
    operators = latest.get("state_operators") or []
    if operators:
        out.state_rows = float(sum(op.get("num_rows_total") or 0 for op in operators))
        out.state_bytes = float(sum(op.get("memory_used_bytes") or 0 for op in operators))
        out.state_rows_read_to_evict = _custom_sum(operators, "numRowsReadDuringEviction")
    sources = latest.get("sources") or []
    for (name, kind), source in zip(
        source_names(declared_sources, len(sources)), sources, strict=True
    ):
        if kind not in RECORD_OFFSET_KINDS:
            continue
        behind = backlog_records(source.get("latest_offset"), source.get("end_offset"))
        if behind is not None:
            out.backlog[name] = behind
    return out
