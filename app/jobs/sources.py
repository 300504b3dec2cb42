"""What tidegate can do with each kind of source: one table, checked by the API and shown at
GET /source-kinds, so a caller knows before asking what a drain or a startpoint will do."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.core.schemas import Response
from tidegate_runtime.sources import kafka_client

DrainMode = Literal["native", "bounded", "unsupported"]


class SourceKind(Response):
    kind: str
    startpoints: list[str] = Field(description="Startpoint types this kind takes.")
    drain: DrainMode = Field(
        description="native: end offsets fixed at drain time, every window flushed by a drain "
        "marker; bounded: the query is stopped at a batch boundary and run again on its "
        "checkpoint with Trigger.AvailableNow (it ends at what was there when the drain "
        "reached it), then one batch that reads nothing with its watermark past every window "
        "flushes the windows still open; unsupported: use stop."
    )
    drain_handoff: bool = Field(
        description="An update by drain can start the next version exactly at the drained "
        "offsets of this kind (OFFSET startpoints per partition)."
    )
    note: str


KINDS: dict[str, SourceKind] = {
    k.kind: k
    for k in (
        SourceKind(
            kind="eventlog",
            startpoints=["OLDEST", "UPCOMING", "OFFSET", "TIMESTAMP"],
            drain="native",
            drain_handoff=True,
            note="tidegate's partitioned event log (tidegate_runtime/sources/eventlog_source.py).",
        ),
        SourceKind(
            kind="kafka",
            startpoints=["OLDEST", "UPCOMING", "OFFSET", "TIMESTAMP"],
            drain="bounded",
            drain_handoff=True,
            note="Spark's Kafka source, one topic per source ('subscribe'); startpoints "
            "resolve in the driver through tidegate's kafka-python consumer, built from the "
            "source's kafka.* options (docs/kafka.md).",
        ),
        SourceKind(
            kind="file",
            startpoints=["OLDEST", "OFFSET"],
            drain="bounded",
            drain_handoff=False,
            note="Spark's file source; OFFSET is the position in its file log.",
        ),
    )
}


def kind(name: str) -> SourceKind:
    """Any other kind (rate, socket, a custom source) has no startpoints and cannot drain."""
    return KINDS.get(name) or SourceKind(
        kind=name,
        startpoints=[],
        drain="unsupported",
        drain_handoff=False,
        note="Unknown to tidegate: it runs, restarts and snapshots, but takes no startpoints "
        "and cannot drain (stop it at a batch boundary instead).",
    )


def problems(kind_name: str, options: dict[str, object]) -> list[str]:
    """Why tidegate could not drive a source declared so (empty: it can), said when a
    version is created rather than when its driver first needs it."""
    if kind_name == "kafka":
        return kafka_client.source_problems(options)
    return []
