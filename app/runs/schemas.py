from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import Field, StringConstraints

from app.core.schemas import Body, JsonValue, Response, redacting

MetricName = Annotated[str, StringConstraints(max_length=128)]
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]


class TransitionResponse(Response):
    at: datetime
    from_state: str | None
    to_state: str
    reason: str | None


class SpareResponse(Response):
    attempt: int | None = Field(description="The attempt it will become; null: none now.")
    backend_id: str | None = Field(description="Its driver on the backend (null: submitting).")
    ready_at: datetime | None = Field(description="When its runtime said it was ready.")
    last_error: str | None = Field(description="Why the last spare's driver ended, if it did.")
    retry_at: datetime | None = Field(description="No new spare before this (after a failure).")

    _redact = redacting("last_error")


class QueryRestartsResponse(Response):
    restarts: int = Field(description="Times the driver restarted this query alone, this run.")
    failures: int = Field(
        description="Failures since the query last stayed up the restart policy's "
        "stable_period (what its backoff and max_attempts count)."
    )
    last_error: str | None = Field(description="The error of its last failure.")
    last_failed_at: datetime | None
    next_restart_at: datetime | None = Field(
        description="When it restarts (null: it is running, or it gave up)."
    )
    gave_up: bool = Field(
        description="It failed more than max_attempts times in a row: the driver ended with "
        "its error, and the run's own restart policy took over."
    )

    _redact = redacting("last_error")


class QueryFailureReport(Body):
    """A query of the driver failed; the runtime restarts it alone (or gives up)."""

    attempt: int = Field(ge=0, description="The attempt of the driver reporting.")
    query: str = Field(min_length=1, max_length=128)
    failures: int = Field(ge=1, le=2_147_483_647, description="Its failures in a row.")
    error: str = Field(max_length=8000)
    restart_in_seconds: float | None = Field(
        None,
        ge=0,
        le=10 * 365 * 24 * 3600,
        allow_inf_nan=False,
        description="When the query restarts; null: it used up its restarts and the driver "
        "ends with its error.",
    )


class RunResponse(Response):
    id: int
    job: str
    version: int
    cluster: str
    state: str
    stop_reason: str | None
    attempt: int = Field(description="Restarts of this run so far (0 for the first submission).")
    failures: int = Field(description="Failures since the run last stayed healthy (PSTL's n).")
    backend_id: str | None
    tag: str = Field(description="The Spark app name / Livy batch name of the current attempt.")
    observed_state: str | None
    observed_at: datetime | None
    last_error: str | None
    next_restart_at: datetime | None
    running_since: datetime | None
    progress: dict[str, Any] = Field(
        description="Latest progress per query: the driver's report of its last batch, plus "
        "rows_dropped_late (rows its stateful operators discarded as behind the watermark in "
        "that batch, summed over them; null when none reports it), rows_dropped_late_total "
        "(the same over every batch of this run, each batch counted once) and "
        "watermark_lead_seconds (the watermark minus the driver's clock at the batch's start: "
        "positive when the watermark runs ahead of the clock)."
    )
    query_restarts: dict[str, QueryRestartsResponse] = Field(
        default_factory=dict,
        description="Queries the driver restarted alone after they failed (the job's "
        "restart policy, per query), by name. The driver's own restarts are in attempt.",
    )
    drain: dict[str, Any] | None = Field(
        None, description="Drain: requested_at, end_offsets per source and partition, drained_at."
    )
    standby_ready_at: datetime | None = Field(
        None,
        description="A pre-warmed run (an update's prewarm): when its driver, started while "
        "the run it replaces still processed, was ready (session built, Python started).",
    )
    go_at: datetime | None = Field(
        None,
        description="A pre-warmed run: when it was told to start its queries (the run it "
        "replaced had ended and its checkpoints were in place). Until then its state is "
        "standby and it is not its job's current run; it holds one idle driver.",
    )
    spare: SpareResponse | None = Field(
        None,
        description="The run's spare, if it has one (a hot spare, or a pre-warmed restart's): "
        "its next attempt's driver, started ahead and waiting before its queries, which takes "
        "over when the current attempt ends. It holds one idle driver. Also shown when the "
        "last one failed (last_error, retry_at).",
    )
    created_by: str
    created_at: datetime
    ended_at: datetime | None
    transitions: list[TransitionResponse] | None = Field(
        None, description="Recent state changes, newest first (single-run reads only)."
    )

    _redact = redacting("last_error")


class SourceProgress(Body):
    description: str | None = Field(None, max_length=2000)
    start_offset: JsonValue = None
    end_offset: JsonValue = None
    latest_offset: JsonValue = None
    num_input_rows: int | None = None


class StateOperatorProgress(Body):
    operator_name: str | None = Field(None, max_length=256)
    num_rows_total: int | None = None
    memory_used_bytes: int | None = None
    num_rows_dropped_by_watermark: int | None = Field(
        None,
        ge=0,
        description="Rows the operator discarded in this batch because their event time was "
        "behind the watermark (Spark's numRowsDroppedByWatermark: late data, counted after "
        "any partial aggregation).",
    )
    custom_metrics: dict[MetricName, FiniteFloat] = Field(
        default_factory=dict,
        max_length=64,
        description="The operator's custom metrics as Spark reports them, summed over its "
        "partitions, the numeric and finite ones (at most 64; per-partition figures left "
        "out): on RocksDB the store's load (rocksdbLoadLatencyMs, "
        "rocksdbReplayChangeLogLatencyMs, rocksdbNumReplayChangelogFiles), the files and "
        "bytes copied from the checkpoint (rocksdbFilesCopied, rocksdbBytesCopied) and the "
        "commit's steps.",
    )


class ProgressReport(Body):
    """One StreamingQueryListener progress event, as the runtime posts it."""

    query: str = Field(max_length=128)
    batch_id: int = Field(ge=0)
    timestamp: str | None = Field(None, max_length=64)
    num_input_rows: int | None = None
    watermark: str | None = Field(None, max_length=64)
    sources: list[SourceProgress] = Field(default_factory=list, max_length=100)
    state_operators: list[StateOperatorProgress] = Field(default_factory=list, max_length=100)
    durations_ms: dict[str, int] = Field(default_factory=dict, max_length=50)
    sink: str | None = Field(
        None, max_length=2000, description="The sink's description, e.g. FileSink[/out]."
    )
    idle: bool = Field(
        False,
        description="Spark's idle event: the query runs and has no new input (no batch). "
        "Recorded as the query's idle_at; batch_id is its last batch.",
    )


class ProgressResponse(Response):
    query: str
    batch_id: int
    at: datetime
    payload: dict[str, Any]


class Directives(Response):
    run_id: int
    attempt: int = Field(description="The attempt the control plane considers current.")
    state: str
    stop: bool = Field(description="Stop every query at a batch boundary, then exit.")
    reason: str | None = None
    drain: dict[str, Any] | None = Field(None, description="Drain request (end offsets).")
    startpoints: list[dict[str, Any]] = Field(
        default_factory=list, description="Startpoints to apply before queries start."
    )
    sources: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="The version's sources: kind and options, by name."
    )
    sink_options: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Per query, the options its declared sink must carry (the Spark conf "
        "holds only their names).",
    )
    query_restart_policy: dict[str, Any] | None = Field(
        None,
        description="The job's restart policy in seconds, applied to each query alone: "
        "enabled, min_backoff_seconds, max_backoff_seconds, random_factor, max_attempts, "
        "stable_period_seconds.",
    )


class RunToken(Response):
    """A driver's run token, traded for the bootstrap token it was started with."""

    token: str = Field(
        description="Send as 'Authorization: Bearer <token>' on this run's channel. It lives a "
        "day past its last use in the second half of that day (each channel call renews it)."
    )


class StandbyAnswer(Response):
    """What a standby driver hears: go (start its queries), stop (exit: it is released), or
    neither yet (ask again)."""

    run_id: int
    attempt: int = Field(description="The attempt the control plane considers current.")
    state: str
    go: bool = Field(description="Start the queries: the run it replaces has ended.")
    stop: bool = Field(description="Exit without starting anything: go will not come.")
    reason: str | None = None


class FenceReport(Body):
    """What a driver's runtime says once it can no longer touch a checkpoint."""

    attempt: int = Field(
        ge=0,
        description="The attempt this driver runs. A report from an earlier attempt (one being "
        "replaced) changes nothing.",
    )


class DrainReport(Body):
    end_offsets: dict[str, dict[str, Any]] = Field(
        description="Per source, the offsets the drain processes up to, in the source's own "
        'format (eventlog: {"0": 120, "1": 95}; file: {"logOffset": 7}). Sources fixed in an '
        "earlier report keep their first value."
    )
    drained: bool = False


class BatchAccount(Response):
    batch_id: int
    read: int | None = Field(
        description="Records the batch read, from the run's checkpoint (offsets/N less "
        "offsets/N-1); null when it cannot say (the first batch, offsets no longer kept)."
    )
    counted_in: int | None = Field(description="Spark's numInputRows for the batch.")
    dropped_late: int = Field(description="Rows its stateful operators dropped as late.")
    not_counted: int | None = Field(description="read minus counted_in; null when either is.")


class QueryAccount(Response):
    query: str
    batches: list[BatchAccount] = Field(description="The batches whose progress is kept.")
    read: int
    counted_in: int
    dropped_late: int
    not_counted: int
    unknown: list[int] = Field(description="Batches that cannot be checked.")


class RunAccount(Response):
    """``tidegate verify``: what a run read against what its queries counted in and dropped."""

    run_id: int
    job: str
    queries: list[QueryAccount]
    complete: bool = Field(
        description="Every batch checked, every record read counted in, none dropped as late."
    )
    verdict: str = Field(description="The same, said for a person.")
