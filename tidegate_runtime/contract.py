"""The contract between tidegate's two sides, each fact written once: the Spark conf keys the
worker sets on a driver and the runtime in it reads, the environment variables that carry the
run's tokens, the dry run's result file, PSTL's restart backoff (the worker's supervisor and
the runtime's per-query supervisor wait by the same formula), and the runtime channel: its
endpoints, what the API sends a driver there (directives, a standby's answer) and what the
driver reports (progress, drain state, applied startpoints, a failed query, its fence), field
by field. Standard library only: the worker imports it without pyspark."""

# No ``from __future__ import annotations``: the shapes' NotRequired keys must be seen at run
# time (tests/runtime/test_contract.py reads them), which Python 3.11 does only then.
import random
from typing import Any, NotRequired, TypedDict

PREFIX = "spark.tidegate."  # reserved: a version's conf may not set these

# Every driver tidegate starts (app/worker/core/submission.py → tidegate_runtime/driver/runtime.py).
API_URL = PREFIX + "api_url"
JOB = PREFIX + "job"
RUN_ID = PREFIX + "run_id"
ATTEMPT = PREFIX + "attempt"
VERSION = PREFIX + "version"
CHECKPOINT_DIR = PREFIX + "checkpoint_dir"  # the run's folder: <root>/<job>/<run>
QUERIES = PREFIX + "queries"  # JSON list of the version's queries (submission.queries_conf)

# A driver started ahead to wait for go (tidegate_runtime/driver/standby.py).
STANDBY = PREFIX + "standby"
STANDBY_TIMEOUT_SECONDS = PREFIX + "standby_timeout_seconds"
SPARE = PREFIX + "spare"  # a spare: the attempt number its go is given to
STANDBY_DRY_RUN_DIR = PREFIX + "standby_dry_run_dir"  # the dry run it runs before it waits

# A dry run (tidegate_runtime/driver/dry_run.py).
DRY_RUN = PREFIX + "dry_run"
DRY_RUN_QUERIES = PREFIX + "dry_run_queries"  # JSON list: the queries that resume state
DRY_RUN_TRIAL = PREFIX + "dry_run_trial"  # JSON: per query, the trial batch's offsets:
# {query: {source: {"start": {partition: offset}, "end": {…}}}} (a fresh version's trial)
DRY_RUN_RESULT = PREFIX + "dry_run_result"  # where the verdict is written
DRY_RUN_TIMEOUT = PREFIX + "dry_run_timeout"
DRY_RUN_RESULT_FILE = "_dryrun.json"

# The run's one-time bootstrap token, handed to the driver's environment (never its conf).
BOOTSTRAP_ENV = "TIDEGATE_RUN_BOOTSTRAP"
# The run token itself, for a driver started with it rather than the bootstrap (by hand).
RUN_TOKEN_ENV = "TIDEGATE_RUN_TOKEN"


def backoff_seconds(
    min_backoff: float,
    max_backoff: float,
    random_factor: float,
    retry: int,
    rng: random.Random | None = None,
) -> float:
    """PSTL's restart delay: min_backoff doubled ``retry`` times (0 for the first restart), at
    most max_backoff, then stretched by up to ``random_factor``."""
    base = min(max_backoff, min_backoff * 2 ** min(max(0, retry), 64))  # no float overflow
    return float(base * (1 + (rng or random).random() * random_factor))


# ---- the runtime channel ----------------------------------------------------------------------
# A run's endpoints, below the API's /api/v1: app/channel/routes.py serves them, the driver's
# client (tidegate_runtime/driver/channel.py) calls them with the run's token.
RUN_CHANNEL = "/runs/{run_id}"
TOKEN_PATH = "/token"  # POST: the bootstrap token traded for the run token
DIRECTIVES_PATH = "/directives"  # GET: Directives (a long-poll with ?wait=)
STANDBY_PATH = "/standby"  # GET: StandbyAnswer (a long-poll with ?wait=)
PROGRESS_PATH = "/progress"  # POST: ProgressReport
STARTPOINTS_APPLIED_PATH = "/startpoints/applied"  # POST: a list of AppliedReport
DRAIN_PATH = "/drain"  # POST: DrainReport
FENCED_PATH = "/fenced"  # POST: FenceReport
QUERY_FAILURES_PATH = "/query-failures"  # POST: QueryFailureReport

# What the API sends a driver. The API's bodies (app/runs/schemas.py, app/startpoints/schemas.py)
# add each field's limits and documentation; tests/runtime/test_contract.py holds their fields
# to these.


class DrainRequest(TypedDict):
    """A drain under way: the end offsets fixed so far, per source (None: none yet)."""

    end_offsets: dict[str, dict[str, Any]] | None


class StartpointDirective(TypedDict):
    """A startpoint to apply when its source's query starts (sources/positions.py reads it)."""

    id: int
    source: str
    partition: int | None
    type: str
    value: Any


class SourceDeclaration(TypedDict):
    """A declared source: its kind (eventlog, kafka, file, ...) and its reader's options."""

    kind: str
    options: dict[str, Any]


class QueryRestartPolicy(TypedDict):
    """The job's restart policy in seconds, applied by the driver to each query alone."""

    enabled: bool
    min_backoff_seconds: float
    max_backoff_seconds: float
    random_factor: float
    max_attempts: int | None
    stable_period_seconds: float


class Directives(TypedDict):
    """What the control plane wants of a run's driver: stop (at a batch boundary), drain, or
    run on; with what its queries start from (startpoints, sources, sinks' options, policy)."""

    run_id: int
    attempt: int
    state: str
    stop: bool
    reason: str | None
    drain: DrainRequest | None
    startpoints: list[StartpointDirective]
    sources: dict[str, SourceDeclaration]
    sink_options: dict[str, dict[str, str]]
    query_restart_policy: QueryRestartPolicy | None


class StandbyAnswer(TypedDict):
    """What a driver started ahead hears: go (start its queries), stop (exit), or neither."""

    run_id: int
    attempt: int
    state: str
    go: bool
    stop: bool
    reason: str | None


# What the driver reports. The keys a report may leave out are NotRequired (the API's default).


class SourceProgress(TypedDict):
    description: NotRequired[str | None]
    start_offset: NotRequired[Any]
    end_offset: NotRequired[Any]
    latest_offset: NotRequired[Any]
    num_input_rows: NotRequired[int | None]


class StateOperatorProgress(TypedDict):
    operator_name: NotRequired[str | None]
    num_rows_total: NotRequired[int | None]
    memory_used_bytes: NotRequired[int | None]
    num_rows_dropped_by_watermark: NotRequired[int | None]  # late rows, Spark's count
    custom_metrics: NotRequired[dict[str, float]]


class ProgressReport(TypedDict):
    """A query's batch, as Spark's listener saw it; or, with ``idle``, that it waits for input
    (``batch_id`` then its last batch)."""

    query: str
    batch_id: int
    timestamp: NotRequired[str | None]
    num_input_rows: NotRequired[int | None]
    watermark: NotRequired[str | None]
    sources: NotRequired[list[SourceProgress]]
    state_operators: NotRequired[list[StateOperatorProgress]]
    durations_ms: NotRequired[dict[str, int]]
    sink: NotRequired[str | None]
    idle: NotRequired[bool]


class DrainReport(TypedDict):
    """End offsets the driver fixed (or reached), per source; ``drained`` once it is done."""

    end_offsets: dict[str, dict[str, Any]]
    drained: NotRequired[bool]


class AppliedReport(TypedDict):
    """What the driver applied for one source of one query (offsets before and after)."""

    query: str
    source: str
    startpoint_ids: list[int]
    checkpoint: NotRequired[str | None]
    batch_id: NotRequired[int | None]
    before: NotRequired[dict[str, int] | None]
    after: dict[str, int]
    original_file: NotRequired[str | None]


class QueryFailureReport(TypedDict):
    """A query failed: restarted alone in ``restart_in_seconds``, or None: the driver ends."""

    attempt: int
    query: str
    failures: int
    error: str
    restart_in_seconds: NotRequired[float | None]


class FenceReport(TypedDict):
    """The driver's queries and Spark context have stopped: it can touch no checkpoint."""

    attempt: int
