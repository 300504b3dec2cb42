"""The stable public path of the event log's Spark source, as a pipeline reads it:
``from tidegate_runtime.source import read_events``. The code lives in
tidegate_runtime/sources/eventlog_source.py; a pipeline imports it from here, so the runtime's
own layout can change under it."""

from tidegate_runtime.sources.eventlog_source import (
    DRAIN_MARKER_TIMESTAMP,
    read_events,
    with_event_time,
    without_drain_marker,
)

__all__ = ["DRAIN_MARKER_TIMESTAMP", "read_events", "with_event_time", "without_drain_marker"]
