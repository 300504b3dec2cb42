from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from app.core.schemas import Body, Name, Response
from app.startpoints.models import StartpointState

StartpointType = Literal["OLDEST", "UPCOMING", "OFFSET", "TIMESTAMP"]
MAX_PARTITION = 1_000_000


class StartpointSet(Body):
    source: Name = Field(description="A source name declared by the job's current version.")
    partition: int | None = Field(
        None, ge=0, le=MAX_PARTITION, description="Omitted: every partition of the source."
    )
    type: StartpointType
    value: int | str | None = Field(
        None,
        description="OFFSET: the next offset to read. TIMESTAMP: epoch milliseconds or "
        "ISO-8601; resolved to the first record at or after it. None for OLDEST/UPCOMING.",
        examples=[1_767_225_600_000, "2026-01-01T00:00:00Z"],
    )

    @field_validator("value", mode="before")
    @classmethod
    def _no_bools(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError("must be a number or an ISO-8601 string, not a boolean")
        return v

    @field_validator("partition", mode="before")
    @classmethod
    def _partition_not_bool(cls, v: Any) -> Any:
        if isinstance(v, bool):  # JSON true would pass as partition 1
            raise ValueError("must be a partition number, not a boolean")
        return v

    @model_validator(mode="after")
    def _value_matches_type(self) -> StartpointSet:
        if self.type in ("OLDEST", "UPCOMING"):
            if self.value is not None:
                raise ValueError(f"{self.type} takes no value; remove 'value'")
            return self
        if self.value is None:
            raise ValueError(f"{self.type} needs a 'value'")
        if self.type == "OFFSET":
            if not isinstance(self.value, int) or self.value < 0:
                raise ValueError("an OFFSET value is a non-negative integer")
        else:
            self.value = timestamp_ms(self.value)
        if isinstance(self.value, int) and self.value > 2**62:
            raise ValueError("value is out of range")
        return self


def timestamp_ms(value: int | str) -> int:
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a TIMESTAMP is epoch milliseconds >= 0")
        return value
    text = value.strip()
    if text.isdigit():
        return int(text)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"'{value}' is not a timestamp: use epoch milliseconds or ISO-8601 such as "
            "2026-01-01T00:00:00Z"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


class StartpointsPut(Body):
    startpoints: list[StartpointSet] = Field(min_length=1, max_length=100_000)
    restart: bool = Field(
        False, description="Also restart the job now so the startpoints apply at once."
    )


class StartpointResponse(Response):
    id: int
    source: str
    partition: int | None
    type: StartpointType
    value: int | None
    state: StartpointState
    created_by: str
    created_at: datetime
    updated_at: datetime


class ApplicationResponse(Response):
    id: int
    run_id: int
    attempt: int
    query: str
    source: str
    startpoints: list[dict[str, Any]]
    batch_id: int | None
    before_offsets: dict[str, int] | None
    after_offsets: dict[str, int]
    applied_at: datetime
    committed_at: datetime | None
    reverted_at: datetime | None
    reverted_by: str | None


class StartpointsView(Response):
    pending: list[StartpointResponse] = Field(
        description="Pending and applied startpoints, by source and partition: one page."
    )
    next_cursor: str | None = Field(
        None,
        description="More pending startpoints: pass as `cursor` for the next page (the same "
        "`applied` comes with every page); null on the last page.",
    )
    applied: list[ApplicationResponse] = Field(description="Recent applications, newest first.")


class PutResult(Response):
    upserted: int
    restart_operation_id: int | None = None


class PreviewRow(Response):
    source: str
    partition: int
    startpoint_id: int
    type: StartpointType
    value: int | None
    current: int | None = Field(description="Where the query would start without it.")
    target: int
    move: Literal["replay", "skip", "none", "unknown"]
    records: int | None = Field(description="Records replayed (backward) or skipped (forward).")


class PreviewError(Response):
    source: str
    error: str


class PreviewLate(Response):
    """Of one query that would replay records: the event-time watermark it would start with
    and how many replayed records lie behind it (Spark's stateful operators may drop those
    as late; docs/late-data.md)."""

    source: str
    query: str
    replayed: int = Field(description="Records this query would read again.")
    watermark: datetime | None = Field(
        description="The watermark its next batch filters late rows with now (null: none)."
    )
    start_watermark: datetime | None = Field(
        description="The watermark it would start with after the startpoints are applied."
    )
    lowered: bool = Field(description="The rewind lowers the watermark (to keep the replay).")
    behind: int | None = Field(
        description="Replayed records with a time before start_watermark (may be dropped as "
        "late); null when their times cannot all be read."
    )
    note: str = Field(description="The same, said for a person.")


class Preview(Response):
    rows: list[PreviewRow]
    errors: list[PreviewError]
    late: list[PreviewLate] = Field(
        description="Per query that would replay records: its watermark and the records behind it."
    )


class AppliedReport(Body):
    """What the runtime applied for one source of one query."""

    query: str = Field(max_length=128)
    source: str = Field(max_length=128)
    startpoint_ids: list[int] = Field(max_length=100_000)
    checkpoint: str | None = Field(None, max_length=4096)
    batch_id: int | None = Field(None, ge=0)
    before: dict[str, int] | None = None
    after: dict[str, int]
    original_file: str | None = Field(None, max_length=4096)
