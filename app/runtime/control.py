"""The in-job side of tidegate: wires queries from the version spec, reports progress, and
follows the control plane's directives (stop at a batch boundary; drain and startpoints
arrive through the same channel).

A job file does::

    runtime = Runtime.from_spark(spark)
    runtime.start("counts", df.writeStream.format("parquet").option("path", out))
    runtime.await_termination()

Without tidegate's confs (``spark-submit`` by hand) the runtime is *unmanaged*: queries start
with the defaults the job passes, and nothing is reported.

Imports only the standard library and pyspark: it runs inside Spark drivers.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming.listener import StreamingQueryListener
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter

from app.runtime import checkpoint as cp
from app.runtime import startpoints as sp
from app.runtime import trial_batch
from app.runtime.chain import drain_stages
from app.runtime.source import MARKER_PARTITION

log = logging.getLogger("tidegate.runtime")

_FRESH_FILE_SOURCE = (
    "source '{source}' is a file source with a startpoint, but its query has no committed "
    "batch yet: Spark's file source has no starting-offsets option (it would ignore "
    '{{"logOffset": N}}), so the startpoint can only move a query that has a checkpoint. '
    "Withdraw it and start the query, then set it again and restart"
)

TOKEN_ENV = "TIDEGATE_RUN_TOKEN"


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

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            f"{self.api_url.rstrip('/')}/api/v1/runs/{self.run_id}{path}",
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
                return json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            detail = _problem_detail(exc)
            if exc.code in (401, 403):
                raise ControlPlaneRefused(
                    f"tidegate refused this run's token ({exc.code}): {detail}. The driver must "
                    f"be started by tidegate, with {TOKEN_ENV} set for run {self.run_id}."
                ) from None
            raise

    def directives(self, attempt: int) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/directives?attempt={attempt}")
        return result

    def progress(self, report: dict[str, Any]) -> None:
        self._call("POST", "/progress", report)

    def startpoints_applied(self, reports: list[dict[str, Any]]) -> None:
        self._call("POST", "/startpoints/applied", reports)

    def drain_state(self, state: dict[str, Any]) -> None:
        self._call("POST", "/drain", state)


def _problem_detail(exc: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(exc.read()).get("detail", exc.reason))
    except Exception:
        return str(exc.reason)


def progress_report(name: str, progress: Any) -> dict[str, Any]:
    """Listener progress -> the API's ProgressReport."""
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
            }
            for op in data.get("stateOperators") or []
        ],
        "durations_ms": {k: int(v) for k, v in (data.get("durationMs") or {}).items()},
        # e.g. "FileSink[/out]": a file sink skips batch ids it holds (restores check it).
        "sink": ((data.get("sink") or {}).get("description") or "")[:2000] or None,
    }


class _Reporter(StreamingQueryListener):
    """Queues progress; a background thread posts it, so Spark's listener bus never waits
    on the network."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        name = event.progress.name
        if name in self.runtime.queries:
            self.runtime._outbox.put(progress_report(name, event.progress))

    def onQueryIdle(self, event: Any) -> None:
        # No new input: the query started and waits. Spark posts no progress then, so say
        # so (an update verifies a new run by its first batch, or by this when idle).
        for name, query in list(self.runtime.queries.items()):
            if str(query.id) == str(event.id):
                last = query.lastProgress
                batch = int(last["batchId"]) if last and "batchId" in last else 0
                self.runtime._outbox.put({"query": name, "batch_id": batch, "idle": True})

    def onQueryTerminated(self, event: Any) -> None:
        # Events arrive in order: after this one, every progress of the query has been seen.
        self.runtime._terminated.add(str(event.id))


@dataclass
class Runtime:
    spark: SparkSession
    client: ControlClient | None = None
    attempt: int = 0
    checkpoint_dir: str | None = None
    declared: dict[str, dict[str, Any]] = field(default_factory=dict)
    poll_seconds: float = 1.0
    queries: dict[str, StreamingQuery] = field(default_factory=dict)
    _outbox: queue.Queue[dict[str, Any]] = field(default_factory=queue.Queue)
    _stop: threading.Event = field(default_factory=threading.Event)
    stop_reason: str | None = None
    startpoints: list[sp.Startpoint] = field(default_factory=list)
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    # A job reading Kafka sets this (a consumer) so TIMESTAMP startpoints can resolve.
    kafka_resolver: sp.KafkaResolver | None = None
    _given_starting: dict[str, dict[int, int]] = field(default_factory=dict)
    _drain_end: dict[str, dict[str, int]] | None = None
    _drain_marker: bool = False
    _marker_batches: dict[str, int] = field(default_factory=dict)
    _drain_request: dict[str, Any] | None = None
    _drain_done: bool = False
    _stages: list[list[str]] | None = None  # the drain's order: upstream first
    _stage: int = 0
    _stage_marker: bool = False
    _bounded: set[str] = field(default_factory=set)  # restarted with AvailableNow
    _writers: dict[str, DataStreamWriter] = field(default_factory=dict)
    _terminated: set[str] = field(default_factory=set)
    # Dry run (see app/runtime/trial_batch.py): scratch checkpoints, noop sinks, no control plane.
    dry_run: bool = False
    _dry_targets: dict[str, int] = field(default_factory=dict)
    _dry_result: str = ""
    _dry_timeout: float = trial_batch.DEFAULT_TIMEOUT

    @classmethod
    def from_spark(cls, spark: SparkSession) -> Runtime:
        conf = spark.conf
        if (conf.get(trial_batch.DRY_RUN_CONF, "false") or "").lower() == "true":
            return cls._for_dry_run(spark)
        run_id = conf.get("spark.tidegate.run_id", None)
        if run_id is None:
            return cls(spark)
        token = os.environ.get(TOKEN_ENV)
        if not token:
            raise ControlPlaneRefused(
                f"{TOKEN_ENV} is not set: this driver was started by tidegate (run {run_id}) "
                "but has no run token, so it cannot be controlled. Resubmit through tidegate."
            )
        # Keep the secret out of child processes that do not need it (Python workers).
        os.environ.pop(TOKEN_ENV, None)
        runtime = cls(
            spark,
            client=ControlClient(conf.get("spark.tidegate.api_url") or "", int(run_id), token),
            attempt=int(conf.get("spark.tidegate.attempt", "0") or 0),
            checkpoint_dir=conf.get("spark.tidegate.checkpoint_dir", None),
            declared={
                q["name"]: q for q in json.loads(conf.get("spark.tidegate.queries", "[]") or "[]")
            },
        )
        first = runtime.client.directives(runtime.attempt)  # type: ignore[union-attr]
        if first.get("stop"):
            raise ControlPlaneRefused(
                f"run {run_id} attempt {runtime.attempt} must not start: {first.get('reason')}"
            )
        runtime.startpoints = [sp.Startpoint.from_json(p) for p in first.get("startpoints", [])]
        runtime.sources = first.get("sources", {})
        if first.get("drain") is None:
            runtime._clear_controls()  # a drain cap left by an earlier attempt must not apply
        spark.streams.addListener(_Reporter(runtime))
        threading.Thread(target=runtime._post_loop, name="tidegate-progress", daemon=True).start()
        return runtime

    @classmethod
    def _for_dry_run(cls, spark: SparkSession) -> Runtime:
        """A dry-run driver: no run, no token, no directives; every eventlog source held."""
        conf = spark.conf
        checkpoint_dir = conf.get("spark.tidegate.checkpoint_dir", None)
        if not checkpoint_dir:
            raise TidegateRuntimeError("a dry run needs spark.tidegate.checkpoint_dir")
        declared = {
            # Never a fixed checkpoint_location: that is a real query's checkpoint.
            q["name"]: {**q, "checkpoint_location": None}
            for q in json.loads(conf.get("spark.tidegate.queries", "[]") or "[]")
        }
        runtime = cls(spark, checkpoint_dir=checkpoint_dir, declared=declared, dry_run=True)
        check = json.loads(conf.get(trial_batch.CHECK_CONF, "[]") or "[]")
        runtime._dry_targets = trial_batch.targets(check, runtime.checkpoint_for)
        runtime._dry_result = conf.get(trial_batch.RESULT_CONF, None) or os.path.join(
            checkpoint_dir, trial_batch.RESULT_FILE
        )
        runtime._dry_timeout = float(
            conf.get(trial_batch.TIMEOUT_CONF, None) or trial_batch.DEFAULT_TIMEOUT
        )
        runtime._write_controls(hold=True)  # the planned batch runs; no other reads data
        log.info("dry run of %s on %s", runtime._dry_targets, checkpoint_dir)
        return runtime

    @property
    def managed(self) -> bool:
        return self.client is not None or self.dry_run

    def checkpoint_for(self, name: str) -> str | None:
        spec = self.declared.get(name, {})
        if spec.get("checkpoint_location"):
            return str(spec["checkpoint_location"])
        return f"{self.checkpoint_dir}/{name}" if self.checkpoint_dir else None

    def _points(self, source: str) -> list[sp.Startpoint]:
        return [p for p in self.startpoints if p.source == source]

    def starting_offsets(
        self, source: str | None = None, *, query: str | None = None
    ) -> str | None:
        """Starting offsets for a source's reader when a startpoint must apply to a query
        that has no committed batch yet (with one, the checkpoint is rewritten instead).
        Pass the result as the reader's ``startingOffsets`` when it is not None. Name the
        source, or the query when it reads a single source."""
        if source is None:
            declared = self.declared.get(query or "", {}).get("sources", [])
            if len(declared) != 1:
                return None
            source = str(declared[0]["name"])
        points = self._points(source)
        if not points or source not in self.sources:
            return None
        readers = [
            name
            for name, spec in self.declared.items()
            if any(s.get("name") == source for s in spec.get("sources", []))
        ]
        fresh = [name for name in readers if not _has_commit(self.checkpoint_for(name))]
        if not fresh:
            return None
        decl = self.sources[source]
        if decl["kind"] == "file":
            raise sp.StartpointError(_FRESH_FILE_SOURCE.format(source=source))
        offsets = sp.resolve(decl["kind"], decl["options"], points, None, self.kafka_resolver)
        self._given_starting[source] = offsets
        return sp.format_line(decl["kind"], offsets, decl["options"])

    def control_file(self, source: str) -> str | None:
        """Where the drain cap for an eventlog source is written (the source's controlFile)."""
        if not self.managed or not self.checkpoint_dir:
            return None
        return f"{self.checkpoint_dir}/_control/{source}.json"

    def reader_options(self, query: str) -> dict[str, str]:
        """Options for the reader of a single-source query: startpoints for a fresh query,
        and the drain control file for an eventlog source."""
        out: dict[str, str] = {}
        starting = self.starting_offsets(query=query)
        if starting is not None:
            out["startingOffsets"] = starting
        declared = self.declared.get(query, {}).get("sources", [])
        if len(declared) == 1 and declared[0].get("kind") == "eventlog":
            control = self.control_file(str(declared[0]["name"]))
            if control is not None:
                out["controlFile"] = control
        return out

    def _apply_startpoints(self, name: str) -> None:
        """Rewrite each source's committed offsets before the query starts; report what
        moved so the control plane can show it and undo it."""
        assert self.client is not None
        reports = []
        for index, source in enumerate(self.declared[name].get("sources", [])):
            points = self._points(source["name"])
            if not points:
                continue
            checkpoint = self.checkpoint_for(name)
            assert checkpoint is not None
            if not _has_commit(checkpoint) and source.get("kind") == "file":
                raise TidegateRuntimeError(_FRESH_FILE_SOURCE.format(source=source["name"]))
            if not _has_commit(checkpoint) and source["name"] not in self._given_starting:
                raise TidegateRuntimeError(
                    f"source '{source['name']}' of query '{name}' has startpoints but no "
                    "checkpoint yet, and the job did not pass "
                    f"runtime.starting_offsets('{source['name']}') to its reader"
                )
            decl = self.sources.get(source["name"], {"kind": source["kind"], "options": {}})
            application = sp.apply_to_checkpoint(
                checkpoint,
                name,
                source["name"],
                index,
                decl["kind"],
                decl["options"],
                points,
                self.kafka_resolver,
            )
            if application.batch_id is None:
                application.after = {
                    str(p): o for p, o in self._given_starting[source["name"]].items()
                }
            log.info(
                "startpoints for %s/%s: %s -> %s",
                name,
                source["name"],
                application.before,
                application.after,
            )
            reports.append(
                {
                    "query": application.query,
                    "source": application.source,
                    "startpoint_ids": application.startpoint_ids,
                    "checkpoint": application.checkpoint,
                    "batch_id": application.batch_id,
                    "before": application.before,
                    "after": application.after,
                    "original_file": application.original_file,
                }
            )
        if reports:
            self.client.startpoints_applied(reports)

    def start(
        self,
        name: str,
        writer: DataStreamWriter,
        *,
        trigger: str | None = None,
        checkpoint: str | None = None,
        output_mode: str | None = None,
    ) -> StreamingQuery:
        """Start one query. Managed, its trigger, output mode, partitioning and checkpoint come
        from the version; the keyword arguments are the unmanaged defaults."""
        if self.managed:
            if name not in self.declared:
                raise UndeclaredQuery(
                    f"query '{name}' is not declared by this job version (declared: "
                    f"{', '.join(sorted(self.declared)) or 'none'}); add it to the version."
                )
            spec = self.declared[name]
            trigger = pstl_to_spark_interval(spec["trigger"]) if spec.get("trigger") else None
            output_mode = spec.get("output_mode") or "append"
            checkpoint = self.checkpoint_for(name)
            if self.dry_run:
                # The real sink is never written: noop, and only the batch already planned.
                writer, trigger = writer.format("noop"), "availableNow"
            else:
                if spec.get("partitioned_on"):
                    writer = writer.partitionBy(*spec["partitioned_on"])
                self._apply_startpoints(name)
        writer = writer.queryName(name)
        if output_mode:
            writer = writer.outputMode(output_mode)
        if checkpoint:
            writer = writer.option("checkpointLocation", checkpoint)
        if trigger == "availableNow":
            writer = writer.trigger(availableNow=True)
        elif trigger:
            writer = writer.trigger(processingTime=trigger)
        query = writer.start()
        self.queries[name] = query
        self._writers[name] = writer  # a bounded drain starts it again with AvailableNow
        log.info("started query %s (checkpoint %s)", name, checkpoint)
        if self.dry_run and name not in self._dry_targets:
            query.stop()  # resumes no state: nothing to check
        return query

    def _post_loop(self) -> None:
        assert self.client is not None
        while True:
            report = self._outbox.get()
            try:
                self.client.progress(report)
            except Exception as exc:  # progress is best effort; the job goes on
                log.warning("could not report progress: %s", exc)
            finally:
                self._outbox.task_done()

    def await_termination(self) -> None:
        """Block until every query ends, or a stop directive has stopped them all."""
        if self.dry_run:
            trial_batch.finish(
                self.queries,
                self._dry_targets,
                self.checkpoint_for,
                self._dry_result,
                self._dry_timeout,
            )
            return
        while self.queries and (any(q.isActive for q in self.queries.values()) or self._draining):
            for q in self.queries.values():
                if q.exception() is not None:
                    raise q.exception()  # type: ignore[misc]
            if self.managed:
                self._follow_directives()
                if self._stop.is_set():
                    break
            time.sleep(self.poll_seconds)
        self._flush_progress()
        for q in self.queries.values():
            if q.exception() is not None:
                raise q.exception()  # type: ignore[misc]

    def _follow_directives(self) -> None:
        assert self.client is not None
        try:
            directives = self.client.directives(self.attempt)
        except ControlPlaneRefused:
            raise
        except Exception as exc:  # the control plane may be restarting: keep running
            log.warning("directives unavailable: %s", exc)
            return
        if directives.get("stop") and self._drain_marker and not self._drain_done:
            # The marker has moved the watermark past every window: stopping now would leave
            # a checkpoint that drops all later input as late. Finish the drain (a batch or
            # two) instead; the run ends stopped with its drain complete.
            self._drain(self._drain_request or {})
            return
        if directives.get("stop"):
            self.stop_reason = directives.get("reason") or "stop"
            log.info("stop directive (%s): stopping queries at a batch boundary", self.stop_reason)
            self.stop_all()
        elif directives.get("drain") is not None:
            self._drain_request = directives["drain"]
            self._drain(directives["drain"])

    @property
    def _draining(self) -> bool:
        """A drain has begun and not finished (its queries may be between two runs)."""
        return self._drain_request is not None and not self._drain_done

    def _eventlog_sources(self) -> dict[str, list[tuple[str, int]]]:
        """Source name -> [(query, source index)] for every eventlog source."""
        out: dict[str, list[tuple[str, int]]] = {}
        for name, spec in self.declared.items():
            for index, source in enumerate(spec.get("sources", [])):
                if source.get("kind") == "eventlog":
                    out.setdefault(str(source["name"]), []).append((name, index))
        return out

    def _drain(self, request: dict[str, Any]) -> None:
        """One step of a drain, each poll. Queries drain stage by stage, upstream first
        (their ``upstream`` in the version). In a stage, a query reading only eventlog
        sources drains natively: fix its sources' end offsets, catch up to them, read the
        marker that closes every window, stop at a batch boundary. Any other query is
        stopped at a batch boundary and run again on its checkpoint with AvailableNow."""
        assert self.client is not None
        if self._stages is None:
            self._stages = drain_stages(self.declared.values())
            self._drain_end = dict(request.get("end_offsets") or {})
            if self._drain_end:  # a driver restarted mid-drain: the same ends as before
                self._write_controls(set(self._drain_end) & set(self._eventlog_sources()))
        while self._stage < len(self._stages):
            if not self._drain_stage([n for n in self._stages[self._stage] if n in self.queries]):
                return
            log.info("drain: stage %s done (%s)", self._stage, ", ".join(self._stages[self._stage]))
            self._stage, self._stage_marker, self._marker_batches = self._stage + 1, False, {}
        if self._drain_done:
            return
        self.stop_all()
        self.client.drain_state({"end_offsets": self._drain_end, "drained": True})
        self._drain_done, self.stop_reason = True, "drained"
        log.info("drain: complete at %s", self._drain_end)

    def _native(self, name: str) -> bool:
        return all(s.get("kind") == "eventlog" for s in self.declared[name].get("sources", []))

    def _drain_stage(self, names: list[str]) -> bool:
        """True once every query of the stage has drained and stopped."""
        assert self.client is not None and self._drain_end is not None
        native = [n for n in names if self._native(n)]
        refs = [
            (n, i, str(s["name"]))
            for n in native
            for i, s in enumerate(self.declared[n].get("sources", []))
        ]
        fresh = {src for _, _, src in refs} - set(self._drain_end)
        if fresh:
            fixed = {
                src: {
                    str(p): o
                    for p, o in sp.EventLogPositions(self.sources[src]["options"]).latest().items()
                }
                for src in sorted(fresh)
            }
            self._drain_end.update(fixed)
            self.client.drain_state({"end_offsets": fixed, "drained": False})
            self._write_controls(fresh)
            log.info("drain: end offsets fixed at %s", fixed)
            return False
        done = self._drain_native(native, refs) if native else True
        for name in names:
            if name not in native:
                done = self._drain_bounded(name) and done
        return done

    def _drain_native(self, names: list[str], refs: list[tuple[str, int, str]]) -> bool:
        if not self._stage_marker:
            if all(self._caught_up(q, i, src) for q, i, src in refs):
                self._write_controls({src for _, _, src in refs}, marker=True)
                self._stage_marker = self._drain_marker = True
                log.info("drain: %s caught up; marker sent to flush open windows", names)
            return False
        for name in names:
            if name not in self._marker_batches:
                batch = self._marker_batch(name)
                if batch is not None:
                    self._marker_batches[name] = batch
        if any(name not in self._marker_batches for name in names):
            return False
        # Stateful queries emit their last windows in the no-data batch after the marker.
        for name in names:
            latest = cp.latest_commit_batch(str(self.checkpoint_for(name)))
            stateful = bool(self.declared[name].get("stateful"))
            if stateful and (latest is None or latest <= self._marker_batches[name]):
                return False
        for name in names:
            stop_at_batch_boundary(self.queries[name], checkpoint=self.checkpoint_for(name))
        return True

    def _drain_bounded(self, name: str) -> bool:
        """A source that cannot be capped: stop at a batch boundary, then AvailableNow on the
        same checkpoint reads what is there now and ends; its last offsets are the end."""
        assert self.client is not None and self._drain_end is not None
        if name not in self._bounded:
            stop_at_batch_boundary(self.queries[name], checkpoint=self.checkpoint_for(name))
            writer = self._writers[name]
            self.queries[name] = writer.trigger(availableNow=True).start()
            self._bounded.add(name)
            log.info("drain: %s restarted with AvailableNow on its checkpoint", name)
            return False
        query = self.queries[name]
        if query.isActive:
            return False
        if query.exception() is not None:
            raise query.exception()  # type: ignore[misc]
        ends = {}
        for index, source in enumerate(self.declared[name].get("sources", [])):
            if source["name"] not in self._drain_end:
                ends[str(source["name"])] = self._committed_position(name, index) or {}
        if ends:
            self._drain_end.update(ends)
            self.client.drain_state({"end_offsets": ends, "drained": False})
        return True

    def _clear_controls(self) -> None:
        for source in self._eventlog_sources():
            path = self.control_file(source)
            if path is not None and os.path.exists(path):
                os.remove(path)
                log.info("removed the drain cap %s left by an earlier attempt", path)

    def _write_controls(
        self, names: set[str] | None = None, *, marker: bool = False, hold: bool = False
    ) -> None:
        """Eventlog sources' control files (default: all of them): the drain's cap (and
        marker), or ``hold``: no new data, so the query idles between batches and stops at a
        boundary soon."""
        sources = self._drain_end if self._drain_end is not None else {}
        for source in set(self._eventlog_sources()) if names is None else names:
            path = self.control_file(source)
            if path is None:
                continue
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"end": sources.get(source), "marker": marker, "hold": hold}, f)
            os.replace(tmp, path)

    def _committed_position(self, query: str, index: int) -> dict[str, Any] | None:
        checkpoint = self.checkpoint_for(query)
        if not _has_commit(checkpoint):
            return None
        batch = cp.latest_commit_batch(str(checkpoint))
        assert batch is not None
        _, lines = cp.read_offsets(str(checkpoint), batch)
        line = lines[index] if index < len(lines) else None
        return json.loads(line) if line and line != "-" else None

    def _caught_up(self, query: str, index: int, source: str) -> bool:
        assert self._drain_end is not None
        end = self._drain_end.get(source, {})
        position = self._committed_position(query, index) or {}
        return all(int(position.get(p, 0)) >= int(o) for p, o in end.items())

    def _marker_batch(self, query: str) -> int | None:
        """The first committed batch that read the marker, if one has."""
        checkpoint = self.checkpoint_for(query)
        if not _has_commit(checkpoint):
            return None
        latest = cp.latest_commit_batch(str(checkpoint))
        assert latest is not None

        def has_marker(batch: int) -> bool:
            try:
                _, lines = cp.read_offsets(str(checkpoint), batch)
            except (OSError, cp.CheckpointError):
                return False  # purged by Spark's retention: older than the marker
            return any(
                line and line != "-" and str(MARKER_PARTITION) in json.loads(line) for line in lines
            )

        if not has_marker(latest):
            return None
        first = latest
        while first > 0 and has_marker(first - 1):
            first -= 1
        return first

    def stop_all(self, timeout: float = 120.0) -> None:
        """Stop each query between batches, never in the middle of one, so offsets/N and
        commits/N stay paired and the next start re-runs nothing. Eventlog sources are held
        first: with no new data a busy query soon idles between batches."""
        if self.managed:
            self._write_controls(hold=True)
        for name, q in self.queries.items():
            stop_at_batch_boundary(q, timeout, self.checkpoint_for(name))
        self._stop.set()

    def _flush_progress(self, timeout: float = 5.0) -> None:
        """Post what the listener still has: the last batches' progress is what says a
        drain or a stop reached the end (the driver must not exit before it is sent)."""
        deadline = time.monotonic() + timeout
        ids = {str(q.id) for q in self.queries.values() if not q.isActive}
        while not ids <= self._terminated and time.monotonic() < deadline:
            time.sleep(0.05)
        while self._outbox.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.05)


def _batches_paired(checkpoint: str | None) -> bool:
    """No batch planned but not committed (true when there is nothing to tell)."""
    if not checkpoint or not os.path.isdir(checkpoint):
        return True
    try:
        return cp.latest_offsets_batch(checkpoint) == cp.latest_commit_batch(checkpoint)
    except (OSError, cp.CheckpointError):
        return True


def _has_commit(checkpoint: str | None) -> bool:
    return (
        bool(checkpoint)
        and os.path.isdir(str(checkpoint))
        and (cp.latest_commit_batch(str(checkpoint)) is not None)
    )


def stop_at_batch_boundary(
    query: StreamingQuery, timeout: float = 120.0, checkpoint: str | None = None
) -> None:
    """Stop ``query`` between batches. Spark has no graceful stop: ``stop()`` interrupts a
    running batch, so wait until no trigger is active and, given the checkpoint, until the
    latest planned batch (``offsets/N``) is committed (``commits/N``)."""
    deadline = time.monotonic() + timeout
    while query.isActive and time.monotonic() < deadline:
        status = query.status
        if not status.get("isTriggerActive", False) and _batches_paired(checkpoint):
            query.stop()
            return
        time.sleep(0.05)
    if query.isActive:
        log.warning(
            "query %s still in a batch after %.0fs; stopping it anyway", query.name, timeout
        )
        query.stop()
