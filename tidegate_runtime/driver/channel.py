"""The driver's side of the runtime channel (app/channel/ is the API's): its HTTP client, the errors
the runtime raises, and the progress report it posts for each batch. Standard library only (runs in
drivers)."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from tidegate_runtime import contract


class TidegateRuntimeError(Exception):
    """The control plane refused us or the job asked for something its version does not
    declare: the driver should fail with this message."""


class UndeclaredQuery(TidegateRuntimeError):
    pass


class ControlPlaneRefused(TidegateRuntimeError):
    pass


def pstl_to_spark_interval(trigger: str) -> str:
    """'15 SECONDS' -> '15 seconds' (Spark's processingTime format)."""
    number, unit = trigger.split()
    return f"{int(number)} {unit.lower()}"


@dataclass
class ControlClient:
    api_url: str
    run_id: int
    token: str
    timeout: float = 10.0

    def _call(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            f"{self.api_url.rstrip('/')}/api/v1{contract.RUN_CHANNEL.format(run_id=self.run_id)}{path}",
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as resp:
                raw = resp.read()
                return json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            detail = _problem_detail(exc)
            if exc.code in (401, 403):
                raise ControlPlaneRefused(
                    f"tidegate refused this run's token ({exc.code}): {detail}. The driver must "
                    f"be started by tidegate, with {contract.RUN_TOKEN_ENV} set for run "
                    f"{self.run_id}."
                ) from None
            raise

    def exchange_bootstrap(self) -> str:
        """This client's token is the driver's bootstrap token: trade it for the run token
        (once: the bootstrap is spent) and use that from now on."""
        answer = self._call("POST", contract.TOKEN_PATH)
        self.token = str(answer["token"])
        return self.token

    def directives(self, attempt: int, wait: int = 0) -> contract.Directives:
        """What the control plane wants; with ``wait``, a long-poll answered at once when the
        run is to stop or drain, else after ``wait`` seconds."""
        query = f"attempt={attempt}" + (f"&wait={wait}" if wait else "")
        result: contract.Directives = self._call(
            "GET", f"{contract.DIRECTIVES_PATH}?{query}", timeout=wait + self.timeout
        )
        return result

    def standby(self, attempt: int, wait: int, spare: int | None = None) -> contract.StandbyAnswer:
        """A standby's long-poll: answers at go or release, else after ``wait`` seconds."""
        which = "" if spare is None else f"&spare={spare}"
        result: contract.StandbyAnswer = self._call(
            "GET",
            f"{contract.STANDBY_PATH}?attempt={attempt}&wait={wait}{which}",
            timeout=wait + self.timeout,
        )
        return result

    def progress(self, report: contract.ProgressReport) -> None:
        try:
            self._call("POST", contract.PROGRESS_PATH, report)
        except urllib.error.HTTPError as exc:
            if exc.code != 422 or not _has_newer_fields(report):
                raise
            # An API older than this runtime (tidegate rolled back under a running driver)
            # refuses the fields: the rest of the report is what its figures need.
            self._call("POST", contract.PROGRESS_PATH, _without_newer_fields(report))

    def startpoints_applied(self, reports: list[contract.AppliedReport]) -> None:
        self._call("POST", contract.STARTPOINTS_APPLIED_PATH, reports)

    def drain_state(self, state: contract.DrainReport) -> None:
        self._call("POST", contract.DRAIN_PATH, state)

    def fenced(self, attempt: int) -> None:
        report: contract.FenceReport = {"attempt": attempt}
        self._call("POST", contract.FENCED_PATH, report)

    def query_failed(self, report: contract.QueryFailureReport) -> None:
        self._call("POST", contract.QUERY_FAILURES_PATH, report)


def _problem_detail(exc: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(exc.read()).get("detail", exc.reason))
    except Exception:
        return str(exc.reason)


# The API keeps at most this many of an operator's custom metrics (RocksDB reports ~40).
MAX_CUSTOM_METRICS = 64
# Kept first when an operator reports more: what /metrics and the benchmarks read.
KEY_METRICS = (
    "numRowsReadDuringEviction",
    "rocksdbLoadLatencyMs",
    "rocksdbLoadFromSnapshotLatencyMs",
    "rocksdbReplayChangeLogLatencyMs",
    "rocksdbNumReplayChangelogFiles",
    "rocksdbNumLoadedFromDfs",
    "rocksdbFilesCopied",
    "rocksdbBytesCopied",
)
_KEY_ORDER = {name: i for i, name in enumerate(KEY_METRICS)}


# Operator fields an older API may refuse (each added after the first runtime shipped).
NEWER_OPERATOR_FIELDS = ("custom_metrics", "num_rows_dropped_by_watermark")


def _has_newer_fields(report: contract.ProgressReport) -> bool:
    return any(
        op.get(name) is not None and op.get(name) != {}
        for op in report.get("state_operators") or []
        for name in NEWER_OPERATOR_FIELDS
    )


def _without_newer_fields(report: contract.ProgressReport) -> contract.ProgressReport:
    operators: list[contract.StateOperatorProgress] = [
        {k: v for k, v in op.items() if k not in NEWER_OPERATOR_FIELDS}  # type: ignore[misc]
        for op in report.get("state_operators") or []
    ]
    return {**report, "state_operators": operators}


def _count(value: Any) -> int | None:
    """A non-negative row count as Spark reports it (None when absent or not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return max(0, int(value))


def operator_metrics(metrics: Any) -> dict[str, float]:
    """A state operator's custom metrics (the RocksDB store's load, replay and commit times,
    files and bytes copied, rows read to evict): the numeric ones, as many as the API keeps.
    Per-partition figures (``SnapshotLastUploaded.partition_7_default``: one per partition)
    are left out: they would crowd out the operator's own at 200 partitions."""
    if not isinstance(metrics, dict):
        return {}
    numeric = {
        str(k)[:128]: float(v)
        for k, v in sorted(
            metrics.items(), key=lambda kv: (_KEY_ORDER.get(kv[0], len(_KEY_ORDER)), kv[0])
        )
        if isinstance(v, int | float)
        and not isinstance(v, bool)
        and math.isfinite(v)  # NaN is not JSON: the whole report would be refused
        and ".partition_" not in str(k)
    }
    return dict(list(numeric.items())[:MAX_CUSTOM_METRICS])


def progress_report(name: str, progress: Any) -> contract.ProgressReport:
    """Listener progress -> the API's ProgressReport (its shape: contract.ProgressReport)."""
    data = json.loads(progress.json) if hasattr(progress, "json") else dict(progress)

    def offsets(value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value

    return {
        "query": name,
        "batch_id": int(data.get("batchId", 0)),
        "timestamp": data.get("timestamp"),
        "num_input_rows": int(data.get("numInputRows") or 0),
        "watermark": (data.get("eventTime") or {}).get("watermark"),
        "sources": [
            {
                "description": (s.get("description") or "")[:2000],
                "start_offset": offsets(s.get("startOffset")),
                "end_offset": offsets(s.get("endOffset")),
                "latest_offset": offsets(s.get("latestOffset")),
                "num_input_rows": s.get("numInputRows"),
            }
            for s in data.get("sources") or []
        ],
        "state_operators": [
            {
                "operator_name": op.get("operatorName"),
                "num_rows_total": op.get("numRowsTotal"),
                "memory_used_bytes": op.get("memoryUsedBytes"),
                # Input rows the operator discarded as behind the watermark (late data).
                "num_rows_dropped_by_watermark": _count(op.get("numRowsDroppedByWatermark")),
                "custom_metrics": operator_metrics(op.get("customMetrics")),
            }
            for op in data.get("stateOperators") or []
        ],
        "durations_ms": {k: int(v) for k, v in (data.get("durationMs") or {}).items()},
        # e.g. "FileSink[/out]": a file sink skips batch ids it holds (restores check it).
        "sink": ((data.get("sink") or {}).get("description") or "")[:2000] or None,
    }
