"""Jobs, versions and their queries, as callers send and see them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from app.core.durations import normalise_trigger, parse_duration, parse_trigger
from app.core.redaction import redact
from app.core.run_states import RunState
from app.core.schemas import Body, JsonObject, Name, Response, redacting
from tidegate_runtime import contract

Duration = Annotated[str, Field(examples=["1s", "100ms", "1h"], max_length=32)]


class RestartPolicy(Body):
    """PSTL's supervised exponential backoff. Defaults are PSTL's."""

    enabled: bool = True
    min_backoff: Duration = "1s"
    max_backoff: Duration = "1h"
    random_factor: float = Field(0.0, ge=0.0, le=100.0)
    max_attempts: int | None = Field(
        None,
        ge=0,
        le=2_147_483_647,
        description="Restarts before the job is failed; null = unlimited.",
    )
    stable_period: Duration = Field(
        "1m", description="A run healthy this long resets the failure count."
    )

    @field_validator("min_backoff", "max_backoff", "stable_period")
    @classmethod
    def _duration(cls, v: str) -> str:
        parse_duration(v)
        return v

    @model_validator(mode="after")
    def _order(self) -> RestartPolicy:
        if parse_duration(self.min_backoff) > parse_duration(self.max_backoff):
            raise ValueError("min_backoff must not be greater than max_backoff")
        return self

    def in_seconds(self) -> contract.QueryRestartPolicy:
        """The policy as a driver's runtime reads it (it restarts each query alone by it)."""
        return {
            "enabled": self.enabled,
            "min_backoff_seconds": parse_duration(self.min_backoff).total_seconds(),
            "max_backoff_seconds": parse_duration(self.max_backoff).total_seconds(),
            "random_factor": self.random_factor,
            "max_attempts": self.max_attempts,
            "stable_period_seconds": parse_duration(self.stable_period).total_seconds(),
        }


# "idle" (never run), else its current run's state.
JobState = Literal["idle", RunState]


PREWARM = (
    "Updates start the new version's driver as a standby while the old run processes, so "
    "the switch pays no driver start (it costs one more driver on the cluster for the "
    "switch's length); an update's own prewarm overrides this. Restarts too: the run's "
    "next attempt starts as a spare first."
)

HOT_SPARE = (
    "Keep a spare driver warm for the current run's next attempt (session built, Python "
    "started, waiting before its queries), so that after a driver crash the supervised "
    "restart takes over in seconds instead of paying a driver start. It costs one idle driver "
    "(its cores and memory) on the cluster for as long as the job runs; the run shows it "
    "(spare_*), and so does tidegate_job_standby_drivers."
)


class JobCreate(Body):
    name: Name = Field(examples=["clicks-per-minute"])
    description: str | None = Field(None, max_length=4000)
    restart_policy: RestartPolicy = Field(default_factory=RestartPolicy)
    prewarm: bool = Field(True, description=PREWARM)
    hot_spare: bool = Field(False, description=HOT_SPARE)


class JobUpdate(Body):
    description: str | None = Field(None, max_length=4000)
    restart_policy: RestartPolicy | None = None
    prewarm: bool | None = Field(None, description=PREWARM)
    hot_spare: bool | None = Field(None, description=HOT_SPARE)


class JobResponse(Response):
    name: str
    description: str | None
    state: JobState
    restart_policy: RestartPolicy
    prewarm: bool = Field(True, description=PREWARM)
    hot_spare: bool = Field(False, description=HOT_SPARE)
    latest_version: int | None = None
    current_run_id: int | None = None
    next_restart_at: datetime | None = None
    revision: int = Field(description="Send as If-Match (quoted) to PATCH safely.")
    created_by: str
    created_at: datetime
    updated_at: datetime


class AppSpec(Body):
    file: str = Field(
        min_length=1,
        max_length=4096,
        description="The PySpark main file: an absolute path or a URL the cluster can read.",
        examples=["/opt/pipelines/windowed_counts.py"],
    )
    py_files: list[Annotated[str, Field(max_length=4096)]] = Field(
        default_factory=list, max_length=100
    )
    args: list[Annotated[str, Field(max_length=4096)]] = Field(default_factory=list, max_length=200)

    @field_validator("py_files")
    @classmethod
    def _one_file_each(cls, files: list[str]) -> list[str]:
        # Spark joins and splits this list on commas: a comma would make one entry two files.
        for entry in files:
            if "," in entry:
                raise ValueError(f"'{entry}' holds a comma: give each file as an entry of its own")
        return files


# Words that follow /startpoints/ in a route of their own, so no source may be named so.
RESERVED_SOURCE_NAMES = frozenset({"preview"})


class SourceSpec(Body):
    name: Name = Field(description="Unique within the job; startpoints address sources by it.")
    kind: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")] = Field(
        examples=["eventlog", "kafka", "file"]
    )
    options: JsonObject = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        if name in RESERVED_SOURCE_NAMES:
            raise ValueError(
                f"'{name}' is reserved (POST …/startpoints/{name} is a route of its own); "
                "name the source otherwise"
            )
        return name


# Spark's built-in file sinks: each keeps a _spark_metadata log of the batches it committed,
# which is what makes its output exactly-once (readers go through that log).
FILE_SINK_FORMATS = frozenset({"parquet", "json", "csv", "orc", "text"})


class SinkSpec(Body):
    """Where a query writes, declared: the runtime refuses a query whose writer says otherwise,
    and a file sink's log is checked against the state a query resumes before anything stops."""

    format: Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")] = Field(
        description="The writer's format: parquet, json, csv, orc, text (file sinks: "
        "exactly-once), foreachBatch (exactly-once when its write is idempotent by batch id), "
        "or any other Spark sink (at-least-once: a re-run batch is written again).",
        examples=["parquet", "foreachBatch", "kafka"],
    )
    path: str | None = Field(
        None,
        min_length=1,
        max_length=4096,
        description="A file sink's output folder (its 'path' option): required for a file sink.",
    )
    options: dict[str, Annotated[str, Field(max_length=4096)]] = Field(
        default_factory=dict,
        max_length=100,
        description="Options the writer must carry with these values (others are free).",
    )

    @field_validator("format")
    @classmethod
    def _lower_file_format(cls, fmt: str) -> str:
        return fmt.lower() if fmt.lower() in FILE_SINK_FORMATS else fmt

    @model_validator(mode="after")
    def _file_sink_has_a_path(self) -> SinkSpec:
        if self.format in FILE_SINK_FORMATS and not self.path:
            raise ValueError(f"a {self.format} sink needs its 'path' (the output folder)")
        if self.path is not None and "\x00" in self.path:
            raise ValueError("the path holds a NUL character")
        if "path" in {k.lower() for k in self.options}:
            raise ValueError("give the output folder as 'path', not among 'options'")
        return self

    @property
    def is_file(self) -> bool:
        return self.format in FILE_SINK_FORMATS


class StatefulOperatorSpec(Body):
    kind: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")] = Field(
        examples=["tumbling_window", "sliding_window", "session_window", "aggregate", "dedup"]
    )
    name: str | None = Field(None, max_length=128)
    key_schema: str | None = Field(None, max_length=8192, description="DDL of the state key.")
    value_schema: str | None = Field(None, max_length=8192, description="DDL of the state value.")


class QuerySpec(Body):
    name: Name | None = Field(
        None, description="Unique within the version. Omitted: derived from the query's input."
    )
    sources: list[SourceSpec] = Field(min_length=1, max_length=50)
    stateful_operators: list[StatefulOperatorSpec] = Field(default_factory=list, max_length=50)
    output_mode: Literal["append", "complete", "update"] = "append"
    trigger: str | None = Field(
        None,
        max_length=64,
        description="PSTL interval, e.g. '15 SECONDS'; omitted: as fast as possible.",
        examples=["15 SECONDS", "5 MINUTES"],
    )
    partitioned_on: list[Name] = Field(default_factory=list, max_length=32)
    sink: SinkSpec | None = Field(
        None,
        description="Where the query writes. Declared, the runtime refuses a writer that "
        "writes elsewhere, and an update or a submit from a snapshot is refused before "
        "anything stops when a file sink's log does not fit the batch the query resumes at. "
        "Omitted: the job's code alone decides (its file sink is checked once the new run "
        "reports it).",
    )
    checkpoint_location: str | None = Field(
        None,
        max_length=4096,
        description="Must lie under the checkpoint root. "
        "Omitted: ${checkpoint_root}/${job}/${run}/${query}.",
    )
    upstream: list[Name] = Field(
        default_factory=list,
        max_length=100,
        description="Queries of this version whose output this query reads (a chain). A "
        "drain finishes them before it fixes this query's end offsets, so nothing they write "
        "is left behind.",
    )

    @field_validator("trigger")
    @classmethod
    def _trigger(cls, v: str | None) -> str | None:
        if v is None:
            return v
        parse_trigger(v)
        return normalise_trigger(v)


class VersionCreate(Body):
    app: AppSpec
    cluster: Name = Field(description="A registered cluster's name.")
    conf: dict[str, str | int | float | bool] = Field(default_factory=dict, max_length=500)
    queries: list[QuerySpec] = Field(min_length=1, max_length=100)
    description: str | None = Field(None, max_length=4000)


class QueryResponse(Response):
    name: str
    name_derived: bool
    sources: list[SourceSpec]
    stateful_operators: list[StatefulOperatorSpec]
    output_mode: str
    trigger: str | None
    trigger_ms: int | None
    partitioned_on: list[str]
    checkpoint_location: str | None
    upstream: list[str] = []
    stateful: bool
    sink: SinkSpec | None = None

    @field_validator("sources")
    @classmethod
    def _redact_options(cls, sources: list[SourceSpec]) -> list[SourceSpec]:
        return [s.model_copy(update={"options": redact(s.options)}) for s in sources]

    @field_validator("sink")
    @classmethod
    def _redact_sink_options(cls, sink: SinkSpec | None) -> SinkSpec | None:
        if sink is None:
            return None
        return sink.model_copy(update={"options": redact(sink.options), "path": redact(sink.path)})


class VersionResponse(Response):
    job: str
    number: int
    cluster: str
    app: AppSpec
    conf: dict[str, str] = Field(description="Secret-looking keys' values are redacted.")
    queries: list[QueryResponse]
    description: str | None
    created_by: str
    created_at: datetime

    _redact = redacting("conf")

    @field_validator("app", mode="before")
    @classmethod
    def _redact_app(cls, app: Any) -> Any:
        # args may carry a password (--password x, a JDBC URL with password=…).
        value = app.model_dump() if isinstance(app, AppSpec) else app
        return redact(value) if isinstance(value, dict) else value
