"""The runtime applying the run's startpoints as each query starts (what a startpoint resolves
to, per source, is tidegate_runtime/sources/positions.py): it starts each query where its
startpoints say: a query with a committed batch
has its checkpoint's offsets rewritten before it starts (reported to the control plane, which
can show and undo it); a fresh query's reader is given ``startingOffsets`` instead. A trial
batch (tidegate_runtime/driver/dry_run.py) starts at the old run's last records the same way.

``Starter`` is a part of ``Runtime`` (tidegate_runtime/driver/runtime.py), kept apart to be read
alone, as ``Drainer`` and ``Restarter`` are: the resolution of a startpoint to offsets is
tidegate_runtime/sources/positions.py; the annotations below name what it uses of the runtime's."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from tidegate_runtime import contract
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.driver import dry_run as dry
from tidegate_runtime.driver.channel import ControlClient, TidegateRuntimeError
from tidegate_runtime.sources import positions as sp
from tidegate_runtime.sources.eventlog import format_offsets

log = logging.getLogger("tidegate.runtime")

_FRESH_FILE_SOURCE = (
    "source '{source}' is a file source with a startpoint, but its query has no committed "
    "batch yet: Spark's file source has no starting-offsets option (it would ignore "
    '{{"logOffset": N}}), so the startpoint can only move a query that has a checkpoint. '
    "Withdraw it and start the query, then set it again and restart"
)


class Starter:
    client: ControlClient | None
    declared: dict[str, dict[str, Any]]
    dry_run: dry.DryRun | None
    startpoints: list[sp.Startpoint]
    sources: dict[str, contract.SourceDeclaration]  # declared sources' kinds and options
    kafka_resolver: sp.KafkaResolver | None  # the job's own, if it set one
    _kafka_resolvers: dict[str, sp.KafkaResolver]  # tidegate's, one per Kafka source
    _given_starting: dict[str, dict[int, int]]  # what starting_offsets gave each source

    if TYPE_CHECKING:  # Runtime's

        def checkpoint_for(self, name: str) -> str | None: ...

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
        if self.dry_run is not None:  # a trial batch starts at the old run's last records
            start = self.dry_run.starting.get(source)
            return None if start is None else format_offsets({int(p): o for p, o in start.items()})
        points = self._points(source)
        if not points or source not in self.sources:
            return None
        readers = [
            name
            for name, spec in self.declared.items()
            if any(s.get("name") == source for s in spec.get("sources", []))
        ]
        fresh = [
            name for name in readers if cp.latest_commit_batch(self.checkpoint_for(name)) is None
        ]
        if not fresh:
            return None
        decl = self.sources[source]
        if decl["kind"] == "file":
            raise sp.StartpointError(_FRESH_FILE_SOURCE.format(source=source))
        offsets = sp.resolve(decl["kind"], decl["options"], points, None, self._kafka(source, decl))
        self._given_starting[source] = offsets
        return sp.format_line(decl["kind"], offsets, decl["options"])

    def _kafka(self, source: str, decl: contract.SourceDeclaration) -> sp.KafkaResolver | None:
        if decl["kind"] != "kafka" or self.kafka_resolver is not None:
            return self.kafka_resolver
        if source not in self._kafka_resolvers:
            from tidegate_runtime.sources.kafka_client import ClientResolver

            self._kafka_resolvers[source] = ClientResolver(decl["options"])
        return self._kafka_resolvers[source]

    def _apply_startpoints(self, name: str) -> None:
        """Rewrite each source's committed offsets before the query starts; report what
        moved so the control plane can show it and undo it."""
        assert self.client is not None
        reports: list[contract.AppliedReport] = []
        for index, source in enumerate(self.declared[name].get("sources", [])):
            points = self._points(source["name"])
            if not points:
                continue
            checkpoint = self.checkpoint_for(name)
            assert checkpoint is not None
            committed = cp.latest_commit_batch(checkpoint) is not None
            if not committed and source.get("kind") == "file":
                raise TidegateRuntimeError(_FRESH_FILE_SOURCE.format(source=source["name"]))
            if not committed and source["name"] not in self._given_starting:
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
                self._kafka(source["name"], decl),
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

    def _close_resolvers(self) -> None:
        """tidegate's Kafka consumers, once no query will start again."""
        for source, resolver in self._kafka_resolvers.items():
            close = getattr(resolver, "close", None)
            try:
                if close is not None:
                    close()
            except Exception as exc:  # an idle consumer left open costs less than a failure
                log.warning("could not close the Kafka consumer of %s: %s", source, exc)
        self._kafka_resolvers.clear()
