"""The runtime following its directives (named for both: a plain stop and a drain are followed
here): stop at a batch boundary, or drain — stage by stage,
upstream first; a query reading only eventlog sources drains natively (end offsets fixed, a
marker that closes every window), any other is restarted with AvailableNow on its checkpoint.
A stage whose queries hold no state with anything left to emit (stateless, or deduplication
only) gets no marker: it ends after the batch that reads up to the end offsets, its state kept
rather than evicted key by key.

``Drainer`` is a part of ``Runtime`` (tidegate_runtime/driver/runtime.py), kept apart to be read
alone: its own state is ``DrainState`` (the runtime's ``_drain_state``); the annotations below name
what it uses of the runtime's."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter

from tidegate_runtime import contract
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.driver.batch_boundary import stop_at_batch_boundary
from tidegate_runtime.driver.channel import ControlClient, ControlPlaneRefused
from tidegate_runtime.driver.drain_order import NOTHING_TO_FLUSH, drain_stages
from tidegate_runtime.driver.restart_policy import Supervisor
from tidegate_runtime.sources import positions as sp
from tidegate_runtime.sources.eventlog_source import MARKER_PARTITION

log = logging.getLogger("tidegate.runtime")


@dataclass
class DrainState:
    """Where a drain is: what it was asked for, its end offsets, its stages (upstream first)
    and the stage under way, the marker's batches, the queries restarted bounded."""

    request: contract.DrainRequest | None = None
    end: dict[str, dict[str, int]] | None = None
    marker: bool = False
    marker_batches: dict[str, int] = field(default_factory=dict)
    done: bool = False
    stages: list[list[str]] | None = None
    stage: int = 0
    stage_marker: bool = False
    bounded: set[str] = field(default_factory=set)  # restarted with AvailableNow
    flushed: set[str] = field(default_factory=set)  # bounded, then their flush batch run


class Drainer:
    client: ControlClient | None
    attempt: int
    declared: dict[str, dict[str, Any]]
    queries: dict[str, StreamingQuery]
    sources: dict[str, contract.SourceDeclaration]
    stop_reason: str | None
    _drain_state: DrainState
    _writers: dict[str, DataStreamWriter]
    supervisor: Supervisor
    _controlled: set[str]  # eventlog sources whose control file a reader was given

    if TYPE_CHECKING:  # Runtime's

        def checkpoint_for(self, name: str) -> str | None: ...

        def _control_path(self, source: str) -> str | None: ...

        def stop_all(self, timeout: float = 120.0) -> None: ...

        def _launch(self, name: str, checkpoint: str | None) -> StreamingQuery: ...

    def _follow_directives(self, wait: int = 0) -> None:
        """Act on the control plane's directives. ``wait``: between checks, ask with a
        long-poll, so a stop or a drain is seen the moment it is decided (not while a drain
        is under way: it takes a step every poll)."""
        assert self.client is not None
        try:
            directives = self.client.directives(self.attempt, 0 if self._draining else wait)
        except ControlPlaneRefused:
            raise
        except Exception as exc:  # the control plane may be restarting: keep running
            log.warning("directives unavailable: %s", exc)
            return
        if directives.get("stop") and self._drain_state.marker and not self._drain_state.done:
            # The marker has moved the watermark past every window: stopping now would leave
            # a checkpoint that drops all later input as late. Finish the drain (a batch or
            # two) instead; the run ends stopped with its drain complete.
            self._drain(self._drain_state.request or {"end_offsets": None})
            return
        if directives.get("stop"):
            self.stop_reason = directives.get("reason") or "stop"
            log.info("stop directive (%s): stopping queries at a batch boundary", self.stop_reason)
            self.stop_all()
        elif (drain := directives.get("drain")) is not None:
            self._drain_state.request = drain
            self._drain(drain)

    @property
    def _draining(self) -> bool:
        """A drain has begun and not finished (its queries may be between two runs)."""
        return self._drain_state.request is not None and not self._drain_state.done

    def _eventlog_sources(self) -> dict[str, list[tuple[str, int]]]:
        """Source name -> [(query, source index)] for every eventlog source."""
        out: dict[str, list[tuple[str, int]]] = {}
        for name, spec in self.declared.items():
            for index, source in enumerate(spec.get("sources", [])):
                if source.get("kind") == "eventlog":
                    out.setdefault(str(source["name"]), []).append((name, index))
        return out

    def _drain(self, request: contract.DrainRequest) -> None:
        """One step of a drain, each poll. Queries drain stage by stage, upstream first
        (their ``upstream`` in the version). In a stage, a query reading only eventlog
        sources drains natively: fix its sources' end offsets, catch up to them, read the
        marker that closes every window, stop at a batch boundary. Any other query is
        stopped at a batch boundary and run again on its checkpoint with AvailableNow."""
        assert self.client is not None
        state = self._drain_state
        if state.stages is None:
            state.stages = drain_stages(self.declared.values())
            state.end = dict(request.get("end_offsets") or {})
            if state.end:  # a driver restarted mid-drain: the same ends as before
                self._write_controls(set(state.end) & set(self._eventlog_sources()))
        while state.stage < len(state.stages):
            if not self._drain_stage([n for n in state.stages[state.stage] if n in self.queries]):
                return
            log.info(
                "drain: stage %s done (%s)",
                state.stage,
                ", ".join(state.stages[state.stage]),
            )
            state.stage, state.stage_marker, state.marker_batches = (
                state.stage + 1,
                False,
                {},
            )
        if state.done:
            return
        self.stop_all()
        self.client.drain_state({"end_offsets": state.end or {}, "drained": True})
        state.done, self.stop_reason = True, "drained"
        log.info("drain: complete at %s", state.end)

    def _native(self, name: str) -> bool:
        """Drained natively: every source is an event log whose reader was given its control
        file (``Runtime.reader_options``/``control_file``). A reader without one never sees
        the cap or the marker, so that query drains bounded instead of waiting for both."""
        sources = self.declared[name].get("sources", [])
        return all(s.get("kind") == "eventlog" for s in sources) and not self._uncapped(name)

    def _uncapped(self, name: str) -> list[str]:
        """The query's event-log sources whose reader was not given its control file."""
        return [
            str(s["name"])
            for s in self.declared[name].get("sources", [])
            if s.get("kind") == "eventlog" and str(s["name"]) not in self._controlled
        ]

    def _drain_stage(self, names: list[str]) -> bool:
        """True once every query of the stage has drained and stopped."""
        assert self.client is not None and self._drain_state.end is not None
        native = [n for n in names if self._native(n)]
        refs = [
            (n, i, str(s["name"]))
            for n in native
            for i, s in enumerate(self.declared[n].get("sources", []))
        ]
        fresh = {src for _, _, src in refs} - set(self._drain_state.end)
        if fresh:
            fixed = {
                src: {
                    str(p): o
                    for p, o in sp.EventLogPositions(self.sources[src]["options"]).latest().items()
                }
                for src in sorted(fresh)
            }
            self._drain_state.end.update(fixed)
            self.client.drain_state({"end_offsets": fixed, "drained": False})
            self._write_controls(fresh)
            log.info("drain: end offsets fixed at %s", fixed)
            return False
        done = self._drain_native(native, refs) if native else True
        for name in names:
            if name not in native:
                done = self._drain_bounded(name) and done
        return done

    def _needs_flush(self, name: str) -> bool:
        """The query holds state that a marker must flush: windows, sessions, joins, anything
        but deduplication (named by its checkpoint's operators, not by the declaration). No
        operator on record yet, the declaration decides; an unreadable one needs the flush."""
        checkpoint = self.checkpoint_for(name)
        try:
            operators = cp.state_operators(checkpoint) if checkpoint else []
        except (OSError, ValueError, KeyError, cp.CheckpointError):
            return True
        if not operators:
            return bool(self.declared[name].get("stateful"))
        query = self.queries.get(name)
        last = query.lastProgress if query is not None else None
        progress = (json.loads(last.json) if hasattr(last, "json") else dict(last)) if last else {}
        # Only an executed batch's progress says what the plan holds: a trigger that ran no
        # batch since the start reports no state operators and no event time at all.
        if progress.get("stateOperators") and "watermark" not in (progress.get("eventTime") or {}):
            # No watermark in its plan (Spark reports one only then): its state, a running
            # aggregate in update mode say, closes nothing by event time, so a marker would
            # flush nothing, and no no-data batch would ever follow it.
            return False
        return any(op.operator_name not in NOTHING_TO_FLUSH for op in operators)

    def _drain_native(self, names: list[str], refs: list[tuple[str, int, str]]) -> bool:
        """Once it reads up to the end offsets, the stage stops at a batch boundary: with
        nothing to flush, after the batch that reads up to them (planned, not yet committed:
        the batch after it, a deduplication's eviction, would only delay the new version),
        else once its marker has flushed it."""
        state = self._drain_state
        if not state.stage_marker:
            flush = any(self._needs_flush(name) for name in names)
            if not all(self._caught_up(q, i, src, planned=not flush) for q, i, src in refs):
                return False
            if flush:
                self._write_controls({src for _, _, src in refs}, marker=True)
                state.stage_marker = state.marker = True
                log.info("drain: %s caught up; marker sent to flush open windows", names)
                return False
            log.info("drain: %s reads up to the end offsets; nothing to flush", names)
        elif not self._flushed(names):
            return False
        for name in names:
            stop_at_batch_boundary(self.queries[name], checkpoint=self.checkpoint_for(name))
        if state.stage_marker or all(self._caught_up(q, i, src) for q, i, src in refs):
            return True
        # Stopped before the batch up to the end offsets committed (interrupted past the
        # stop's timeout): it runs again on its checkpoint, and the drain goes on.
        for name in names:
            log.warning("drain: %s stopped short of the end offsets; started again", name)
            self._launch(name, self.checkpoint_for(name))
        return False

    def _flushed(self, names: list[str]) -> bool:
        """Every query has read the marker and, if it holds state to flush, committed the
        no-data batch after it, which emits its last windows."""
        batches = self._drain_state.marker_batches
        for name in names:
            if name not in batches and (batch := self._marker_batch(name)) is not None:
                batches[name] = batch
        if any(name not in batches for name in names):
            return False
        for name in names:
            latest = cp.latest_commit_batch(str(self.checkpoint_for(name)))
            if self._needs_flush(name) and (latest is None or latest <= batches[name]):
                return False
        return True

    def _drain_bounded(self, name: str) -> bool:
        """A source that cannot be capped (Kafka, files): stop at a batch boundary, then
        AvailableNow on the same checkpoint reads what is there now and ends; its last offsets
        are the end. A query with windows to flush then runs one more batch, planned by the
        runtime: it reads nothing and its watermark is past every window, so each window still
        open is emitted (``checkpoint.plan_flush_batch``), as the event log's marker does."""
        assert self.client is not None and self._drain_state.end is not None
        if name not in self._drain_state.bounded:
            stop_at_batch_boundary(self.queries[name], checkpoint=self.checkpoint_for(name))
            self._writers[name] = self._writers[name].trigger(availableNow=True)
            self._launch(name, self.checkpoint_for(name))  # not restarted again meanwhile
            self._drain_state.bounded.add(name)
            log.info("drain: %s restarted with AvailableNow on its checkpoint", name)
            return False
        query = self.queries[name]
        if query.isActive:
            return False
        if query.exception() is not None:
            return False  # the supervisor restarts it, bounded still, or ends the driver
        if name not in self._drain_state.flushed and self._needs_flush(name):
            self._drain_state.flushed.add(name)
            if cp.plan_flush_batch(str(self.checkpoint_for(name))) is not None:
                self._launch(name, self.checkpoint_for(name))  # the flush batch alone
                log.info("drain: %s read up to its end; a batch flushes its open windows", name)
                return False
        ends = {}
        for index, source in enumerate(self.declared[name].get("sources", [])):
            if source["name"] not in self._drain_state.end:
                ends[str(source["name"])] = self._committed_offsets(name, index)
        if ends:
            self._drain_state.end.update(ends)
            self.client.drain_state({"end_offsets": ends, "drained": False})
        return True

    def _committed_offsets(self, query: str, index: int) -> dict[str, Any]:
        """Source ``index``'s offsets in the query's latest committed batch, by partition for
        the kinds whose drained offsets seed the next version (event log, Kafka); as Spark
        wrote them for any other."""
        position = self._position(query, index, planned=False) or {}
        source = self.declared[query]["sources"][index]
        if source.get("kind") not in ("eventlog", "kafka") or not position:
            return position
        declared = self.sources.get(str(source["name"]))
        options = (declared["options"] if declared else None) or {}
        parsed = sp.parse_line(str(source["kind"]), json.dumps(position), options)
        return {str(p): o for p, o in sorted(parsed.items())}

    def _clear_controls(self) -> None:
        for source in self._eventlog_sources():
            path = self._control_path(source)
            if path is not None and os.path.exists(path):
                os.remove(path)
                log.info("removed the drain cap %s left by an earlier attempt", path)

    def _write_controls(
        self,
        names: set[str] | None = None,
        *,
        marker: bool = False,
        hold: bool = False,
        ends: dict[str, dict[str, int]] | None = None,
    ) -> None:
        """Eventlog sources' control files (default: all of them): a cap (``ends``; by default
        the drain's end offsets) and the drain's marker, or ``hold``: no new data, so the query
        idles between batches and stops at a boundary soon."""
        if ends is None:
            ends = self._drain_state.end if self._drain_state.end is not None else {}
        for source in set(self._eventlog_sources()) if names is None else names:
            path = self._control_path(source)
            if path is None:
                continue
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"end": ends.get(source), "marker": marker, "hold": hold}, f)
            os.replace(tmp, path)

    def _position(self, query: str, index: int, *, planned: bool) -> dict[str, Any] | None:
        """Source ``index``'s offsets in the query's latest committed batch (``planned``: its
        latest planned batch, which may still run)."""
        checkpoint = self.checkpoint_for(query)
        if checkpoint is None:
            return None
        batch = (cp.latest_offsets_batch if planned else cp.latest_commit_batch)(checkpoint)
        if batch is None:
            return None
        _, lines = cp.read_offsets(str(checkpoint), batch)
        line = lines[index] if index < len(lines) else None
        return json.loads(line) if line and line != "-" else None

    def _caught_up(self, query: str, index: int, source: str, *, planned: bool = False) -> bool:
        assert self._drain_state.end is not None
        end = self._drain_state.end.get(source, {})
        position = self._position(query, index, planned=planned) or {}
        return all(int(position.get(p, 0)) >= int(o) for p, o in end.items())

    def _marker_batch(self, query: str) -> int | None:
        """The first committed batch that read the marker, if one has."""
        checkpoint = self.checkpoint_for(query)
        latest = cp.latest_commit_batch(checkpoint)
        if checkpoint is None or latest is None:
            return None

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
