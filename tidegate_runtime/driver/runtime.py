"""The runtime itself, ``Runtime``: the driver's control loop, which wires queries from the
version spec, reports progress, and follows the control plane's directives (stop at a batch
boundary; drain and startpoints arrive through the same channel). Its parts, each read alone:
``Drainer`` (directives.py), ``Restarter`` (query_restarts.py), ``Starter`` (startpoints.py).
A pipeline imports it as ``tidegate_runtime.control.Runtime``, the stable public path.

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
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter

from tidegate_runtime import contract
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.checkpoints import hadoop_files
from tidegate_runtime.driver import dry_run as dry
from tidegate_runtime.driver import sinks, standby
from tidegate_runtime.driver.batch_boundary import fence, stop_at_batch_boundary
from tidegate_runtime.driver.channel import (
    ControlClient,
    ControlPlaneRefused,
    TidegateRuntimeError,
    UndeclaredQuery,
    pstl_to_spark_interval,
)
from tidegate_runtime.driver.directives import Drainer, DrainState
from tidegate_runtime.driver.progress_listener import ProgressReporter
from tidegate_runtime.driver.query_restarts import Restarter
from tidegate_runtime.driver.restart_policy import RestartPolicy, Supervisor
from tidegate_runtime.driver.startpoints import Starter
from tidegate_runtime.sources import positions as sp
from tidegate_runtime.sources.connectors import require_connectors

log = logging.getLogger("tidegate.runtime")


@dataclass
class Runtime(Drainer, Restarter, Starter):
    spark: SparkSession
    client: ControlClient | None = None
    attempt: int = 0
    checkpoint_dir: str | None = None
    declared: dict[str, dict[str, Any]] = field(default_factory=dict)
    poll_seconds: float = 1.0
    queries: dict[str, StreamingQuery] = field(default_factory=dict)
    _outbox: queue.Queue[contract.ProgressReport] = field(default_factory=queue.Queue)
    _stop: threading.Event = field(default_factory=threading.Event)
    stop_reason: str | None = None
    startpoints: list[sp.Startpoint] = field(default_factory=list)
    sources: dict[str, contract.SourceDeclaration] = field(default_factory=dict)
    # A job may set its own Kafka resolver; otherwise each Kafka source gets tidegate's
    # (tidegate_runtime/sources/kafka_client.py), built from the source's declared options.
    kafka_resolver: sp.KafkaResolver | None = None
    _kafka_resolvers: dict[str, sp.KafkaResolver] = field(default_factory=dict)
    _given_starting: dict[str, dict[int, int]] = field(default_factory=dict)
    _drain_state: DrainState = field(
        default_factory=DrainState
    )  # tidegate_runtime/driver/directives.py
    _writers: dict[str, DataStreamWriter] = field(default_factory=dict)
    _controlled: set[str] = field(default_factory=set)
    _terminated: set[str] = field(default_factory=set)
    # Notified as a query's end is heard and as each report is posted: the flush before the
    # fence waits on it, not on a poll's sleep (inside an update's pause).
    _reported: threading.Condition = field(default_factory=threading.Condition)
    # A dry run (tidegate_runtime/driver/dry_run.py): scratch checkpoints, noop sinks, no control
    # plane. None for a real run.
    dry_run: dry.DryRun | None = None
    # Restarts a failed query alone (tidegate_runtime/driver/restart_policy.py); without a policy
    # from the control plane (unmanaged, a dry run), a failed query ends the driver.
    supervisor: Supervisor = field(default_factory=Supervisor)
    # Declared sink options by query, from the directives (never in the Spark conf).
    sink_options: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def from_spark(cls, spark: SparkSession) -> Runtime:
        conf = spark.conf
        if (conf.get(contract.DRY_RUN, "false") or "").lower() == "true":
            return cls._for_dry_run(spark)
        run_id = conf.get(contract.RUN_ID, None)
        if run_id is None:
            return cls(spark)
        # Keep the secrets out of child processes that do not need them (Python workers).
        token = os.environ.pop(contract.RUN_TOKEN_ENV, None)
        bootstrap = os.environ.pop(contract.BOOTSTRAP_ENV, None)
        client = standby.went_with()  # the job's second pass after a standby's dry run
        if client is None:
            if not token and not bootstrap:
                raise ControlPlaneRefused(
                    f"Neither {contract.BOOTSTRAP_ENV} nor {contract.RUN_TOKEN_ENV} is set: this "
                    f"driver was started by tidegate (run {run_id}) but has no token, so it "
                    "cannot be controlled. "
                    "Resubmit through tidegate."
                )
            api_url = conf.get(contract.API_URL) or ""
            client = ControlClient(api_url, int(run_id), str(token or bootstrap))
            if not token:
                client.exchange_bootstrap()  # spent: what a backend showed is useless now
        runtime = cls(
            spark,
            client=client,
            attempt=int(conf.get(contract.ATTEMPT, "0") or 0),
            checkpoint_dir=conf.get(contract.CHECKPOINT_DIR, None),
            declared={q["name"]: q for q in json.loads(conf.get(contract.QUERIES, "[]") or "[]")},
        )
        require_connectors(spark, runtime.declared)  # said plainly, before anything starts
        hadoop_files.register(spark)  # checkpoints in object storage: through Spark's Hadoop
        scratch = standby.dry_run_dir(spark)
        if scratch is not None:
            # A standby of an update by snapshot: the job's code runs its dry run first; then
            # the standby waits for go and runs the job's code again (standby.py).
            standby.warm_up(spark)
            dry_run_first = cls._for_dry_run(spark, scratch)
            channel, attempt = runtime.client, runtime.attempt
            assert channel is not None
            assert dry_run_first.dry_run is not None
            dry_run_first.dry_run.then = lambda: standby.go_then_run_again(spark, channel, attempt)
            return dry_run_first
        # Pre-warmed (a standby or a spare): what came before is paid ahead; wait for go.
        if standby.wait_if_standby(spark, runtime.client, runtime.attempt):  # type: ignore[arg-type]
            log.info("run %s attempt %s: go", run_id, runtime.attempt)
        first = runtime.client.directives(runtime.attempt)  # type: ignore[union-attr]
        if first.get("stop"):
            raise ControlPlaneRefused(
                f"run {run_id} attempt {runtime.attempt} must not start: {first.get('reason')}"
            )
        runtime.startpoints = [sp.Startpoint.from_json(p) for p in first.get("startpoints", [])]
        runtime.sources = first.get("sources", {})
        runtime.supervisor = Supervisor(
            RestartPolicy.from_directives(first.get("query_restart_policy"))
        )
        runtime.sink_options = first.get("sink_options") or {}
        if first.get("drain") is None:
            runtime._clear_controls()  # a drain cap left by an earlier attempt must not apply
        spark.streams.addListener(ProgressReporter(runtime))
        threading.Thread(target=runtime._post_loop, name="tidegate-progress", daemon=True).start()
        return runtime

    @classmethod
    def _for_dry_run(cls, spark: SparkSession, checkpoint_dir: str | None = None) -> Runtime:
        """A dry run: no run, no token, no directives; every eventlog source held."""
        conf = spark.conf
        checkpoint_dir = checkpoint_dir or conf.get(contract.CHECKPOINT_DIR, None)
        if not checkpoint_dir:
            raise TidegateRuntimeError("a dry run needs spark.tidegate.checkpoint_dir")
        declared = {
            # Never a fixed checkpoint_location: that is a real query's checkpoint.
            q["name"]: {**q, "checkpoint_location": None}
            for q in json.loads(conf.get(contract.QUERIES, "[]") or "[]")
        }
        runtime = cls(spark, checkpoint_dir=checkpoint_dir, declared=declared)
        check = json.loads(conf.get(contract.DRY_RUN_QUERIES, "[]") or "[]")
        runtime.dry_run = dry.DryRun.with_trial(
            json.loads(conf.get(contract.DRY_RUN_TRIAL, "{}") or "{}"),
            targets=dry.targets(check, runtime.checkpoint_for),
            result=conf.get(contract.DRY_RUN_RESULT, None)
            or os.path.join(checkpoint_dir, contract.DRY_RUN_RESULT_FILE),
            timeout=float(conf.get(contract.DRY_RUN_TIMEOUT, None) or dry.DEFAULT_TIMEOUT),
        )
        # The planned batch runs, and a trial reads up to its cap; nothing else reads data.
        caps = runtime.dry_run.caps
        runtime._write_controls(set(runtime._eventlog_sources()) - set(caps), hold=True)
        runtime._write_controls(set(caps), ends=caps)  # a cap without a drain: no marker
        log.info("dry run of %s on %s", runtime.dry_run.targets, checkpoint_dir)
        return runtime

    @property
    def managed(self) -> bool:
        return self.client is not None or self.dry_run is not None

    def checkpoint_for(self, name: str) -> str | None:
        spec = self.declared.get(name, {})
        if spec.get("checkpoint_location"):
            return str(spec["checkpoint_location"])
        return f"{self.checkpoint_dir}/{name}" if self.checkpoint_dir else None

    def control_file(self, source: str) -> str | None:
        """The ``controlFile`` option for an eventlog source's reader: where the runtime writes
        a drain's cap and marker. A query whose readers all got theirs drains natively."""
        path = self._control_path(source)
        if path is not None:
            self._controlled.add(source)
        return path

    def _control_path(self, source: str) -> str | None:
        if not self.managed or not self.checkpoint_dir:
            return None
        if cp.is_object_store(self.checkpoint_dir):
            return None  # the event log reads its control file locally: its drain is bounded
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
            uncapped = self._uncapped(name)
            if uncapped:
                log.warning(
                    "query %s reads %s without runtime.reader_options('%s'): a drain of it "
                    "is bounded (its open windows stay in state), and neither a startpoint "
                    "nor an update's trial can set where a fresh query of it starts",
                    name,
                    ", ".join(uncapped),
                    name,
                )
            if spec.get("sink"):  # before a dry run's noop: the dry run refuses it too
                sinks.require_declared(name, writer, spec["sink"], self.sink_options.get(name))
            trigger = pstl_to_spark_interval(spec["trigger"]) if spec.get("trigger") else None
            output_mode = spec.get("output_mode") or "append"
            checkpoint = self.checkpoint_for(name)
            if self.dry_run is not None:
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
        self._writers[name] = writer  # a restart or a bounded drain starts it again
        query = self._launch(name, checkpoint if self.dry_run is None else None)
        log.info("started query %s (checkpoint %s)", name, checkpoint)
        if self.dry_run is not None and name not in self.dry_run.targets:
            query.stop()  # resumes no state: nothing to check
        return query

    def _launch(self, name: str, checkpoint: str | None) -> StreamingQuery:
        """Start query ``name``'s writer (again) on its checkpoint. One whose checkpoint ends in
        a drain's flush (a driver or query restarted mid-drain) runs that batch alone, or, if
        it has run, one more batch that reads nothing: past the flush's watermark any record
        it read would be dropped as late, and the drain would report it read."""
        writer = self._writers[name]
        if checkpoint and self._ends_in_flush(checkpoint):
            cp.plan_flush_batch(checkpoint)
            writer = self._writers[name] = writer.trigger(once=True)
            log.info("query %s: its checkpoint ends in a drain's flush; one batch only", name)
        query = self.queries[name] = writer.start()
        self.supervisor.started(name, time.monotonic())
        return query

    @staticmethod
    def _ends_in_flush(checkpoint: str) -> bool:
        try:
            return cp.ends_in_flush(checkpoint)
        except (OSError, ValueError, cp.CheckpointError):
            return False  # not a checkpoint tidegate can read: Spark says what is wrong

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
                with self._reported:
                    self._reported.notify_all()

    def await_termination(self) -> None:
        """Block until every query ends, or a stop directive has stopped them all."""
        if self.dry_run is not None:
            dry.finish(
                self.queries,
                self.dry_run.targets,
                self.checkpoint_for,
                self.dry_run.result,
                self.dry_run.timeout,
            )
            if self.dry_run.then is not None:
                self.dry_run.then()
            return
        while self.queries:
            # First: a failure is seen even when it left no query running (a job of one query).
            self._supervise()
            if not (
                any(q.isActive for q in self.queries.values())
                or self._draining
                or self.supervisor.any_waiting
            ):
                break
            asked = time.monotonic()
            if self.managed:
                # The long-poll is the wait between checks: a stop is seen as it is decided.
                self._follow_directives(wait=min(25, max(1, round(self.poll_seconds))))
                if self._stop.is_set():
                    break
            time.sleep(max(0.0, self.poll_seconds - (time.monotonic() - asked)))
        # A failure since the last look is reported (or ends the driver) like any other.
        self._supervise()
        self._flush_progress()
        for name, q in self.queries.items():
            # A query waiting for its restart when the stop came stays as its failure left
            # it (as after a crash: its next start re-runs the batch it failed in).
            if q.exception() is not None and not self.supervisor.waiting(name):
                raise q.exception()  # type: ignore[misc]
        if self.client is not None and (self._stop.is_set() or self._drain_state.done):
            fence(self.spark, self.client, self.attempt)
        self._close_resolvers()  # no query starts again; after the fence, which must come first

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
        ids = {str(q.runId) for q in self.queries.values() if not q.isActive}
        with self._reported:
            self._reported.wait_for(
                # Spark's listener bus posts a query's end after its last progress: once
                # every end is heard and the outbox is empty, every report was posted.
                lambda: ids <= self._terminated and not self._outbox.unfinished_tasks,
                timeout,
            )
