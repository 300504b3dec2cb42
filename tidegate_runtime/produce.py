"""The stable public path of the event log's producer, as a pipeline feeds it:
``from tidegate_runtime.produce import produce``. The code lives in
tidegate_runtime/sources/eventlog_producer.py; a pipeline imports it from here, so the
runtime's own layout can change under it."""

from tidegate_runtime.sources.eventlog_producer import append_pairs, produce

__all__ = ["append_pairs", "produce"]
