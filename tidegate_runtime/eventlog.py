"""The stable public path of tidegate's event log, as a pipeline writes and reads it:
``from tidegate_runtime.eventlog import EventLog``. The code lives in
tidegate_runtime/sources/eventlog.py; a pipeline imports it from here, so the runtime's own
layout can change under it."""

from tidegate_runtime.sources.eventlog import EventLog, NewRecord, Record

__all__ = ["EventLog", "NewRecord", "Record"]
