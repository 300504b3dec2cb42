"""Dry run of a new version against a scratch copy of a snapshot (compatibility before anything
stops, where declarations are not enough).

The worker prepares a scratch checkpoint per resumed query (a copy of the snapshot's files)
and plans one empty batch in it: ``offsets/N+1`` = ``offsets/N`` (N the snapshot's committed
batch). It then starts the new version's app with ``spark.tidegate.dry_run=true`` and
``spark.tidegate.checkpoint_dir`` = the scratch root. The runtime then:

* starts every query on its scratch checkpoint with a ``noop`` sink (the real sink is never
  written) and ``Trigger.AvailableNow``; every eventlog source is held (no new data);
* lets each checked query run the planned batch N+1: Spark 4 plans it from the checkpoint,
  loads the state store at version N+1 (what the snapshot holds), and checks the state schema
  and the operator metadata as a real restart would;
* stops every query once that batch is committed or the query failed, and writes the outcome
  per query (ok, or Spark's error class and message) to the result file, which the worker
  reads (the dry-run driver has no run, so no run token: the scratch directory it shares with
  the worker is its channel).

Checked on pyspark 4.3.0 (local mode, ``pipelines/windowed_counts.py`` with 2 committed
batches): the empty batch N+1 and a re-run of batch N (commits/N removed) fail identically:
``avg`` instead of ``sum`` -> STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE (the message quotes both
schemas); grouping by an int column instead of the string key ->
STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE; a session window or a dropDuplicates instead of the
tumbling window -> STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA (the message names
the operators: "(OperatorId: 0 -> OperatorName: stateStoreSave)" vs
"sessionWindowStateStoreSaveExec"). A sliding window of the same size, or another string
column as the key, pass: their state has the same schema, so Spark cannot tell. Each run took
3-5 s in a warm session. The empty batch is used because it needs nothing but the snapshot:
re-running batch N would need state version N (a snapshot holds what loads N+1; with a base
file at N+1 the older deltas are not in it) and batch N's input still readable.

An update that starts the new version on **fresh** state (by drain, or stateless) has no state
to check, so its dry run is a *trial* instead (``spark.tidegate.dry_run_trial``): each query
whose sources are all event logs the old run reads starts on an empty scratch checkpoint at its
sources' ``start`` offsets (the last records the old run committed) and runs one batch up to
``end`` (its committed offsets, written as the sources' cap) into the noop sink, so the new
code plans, runs and writes through its operators on real records before anything stops; in a
standby, that batch also leaves the plan's code generated for the real start after go.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.streaming.query import StreamingQuery

from tidegate_runtime.checkpoints import checkpoint as cp

log = logging.getLogger("tidegate.runtime.dryrun")

DEFAULT_TIMEOUT = 240.0
MESSAGE_LIMIT = 4000

_ERROR_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]{2,})\]")
_WRAPPERS = frozenset({"STREAM_FAILED"})


@dataclass
class DryRun:
    """A runtime running a dry run: the queries it checks (and the batch each must commit),
    where the verdict goes, its bound, and what follows (a standby: wait for go, then run the
    job's code again for real)."""

    targets: dict[str, int] = field(default_factory=dict)
    result: str = ""
    timeout: float = DEFAULT_TIMEOUT
    then: Callable[[], None] | None = None
    # A fresh version's trial batch: where each source starts, and its cap.
    starting: dict[str, dict[str, int]] = field(default_factory=dict)
    caps: dict[str, dict[str, int]] = field(default_factory=dict)

    @classmethod
    def with_trial(cls, trial: dict[str, dict[str, dict[str, Any]]], **kwargs: Any) -> DryRun:
        """A dry run whose trial queries each must commit their first batch (0)."""
        dry_run = cls(**kwargs)
        for query, sources in trial.items():
            dry_run.targets.setdefault(query, 0)
            for source, bounds in sources.items():
                dry_run.starting[source] = {str(p): int(o) for p, o in bounds["start"].items()}
                dry_run.caps[source] = {str(p): int(o) for p, o in bounds["end"].items()}
        return dry_run


def describe_error(exc: BaseException) -> dict[str, Any]:
    """Spark's error -> {"ok": False, "error_class", "message"}. A failed query's exception is
    STREAM_FAILED wrapping the real one: the first other class in the text is the cause."""
    text = str(exc)
    classes = [c for c in _ERROR_CLASS.findall(text) if c not in _WRAPPERS]
    if classes:
        error_class = classes[0]
        text = text[text.find(f"[{error_class}]") + len(error_class) + 2 :]
    else:
        getter = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
        error_class = (getter() if callable(getter) else None) or type(exc).__name__
    text = text.split("=== Streaming Query ===")[0]
    text = re.sub(r"\s*SQLSTATE: \w+", "", text).strip()
    return {"ok": False, "error_class": error_class, "message": text[:MESSAGE_LIMIT]}


def targets(check: list[str], checkpoint_for: Callable[[str], str | None]) -> dict[str, int]:
    """The batch each checked query must commit: the one the worker planned in its scratch
    checkpoint (the latest ``offsets/``)."""
    out = {}
    for name in check:
        path = checkpoint_for(name)
        batch = cp.latest_offsets_batch(path) if path and os.path.isdir(path) else None
        if batch is not None:
            out[name] = batch
    return out


def finish(
    queries: dict[str, StreamingQuery],
    wanted: dict[str, int],
    checkpoint_for: Callable[[str], str | None],
    result_path: str,
    timeout: float,
    poll: float = 0.2,
) -> dict[str, Any]:
    """Wait until each checked query committed its planned batch or failed, stop everything,
    write the result file. Returns the result."""
    outcome: dict[str, dict[str, Any]] = {}
    missing = sorted(set(wanted) - set(queries))
    for name in missing:  # the new app did not start it: nothing of it can be checked
        outcome[name] = {
            "ok": False,
            "error_class": "QUERY_NOT_STARTED",
            "message": f"the app did not start query '{name}' in its dry run",
        }
    deadline = time.monotonic() + timeout
    pending = {n: b for n, b in wanted.items() if n in queries}
    while pending:
        for name, batch in list(pending.items()):
            query = queries[name]
            committed = cp.latest_commit_batch(str(checkpoint_for(name)))
            if committed is not None and committed >= batch:
                outcome[name] = {"ok": True, "batch_id": batch}
            elif not query.isActive:
                exc = query.exception()
                outcome[name] = (
                    describe_error(exc)
                    if exc is not None
                    else {
                        "ok": False,
                        "error_class": "QUERY_ENDED",
                        "message": f"query '{name}' ended before committing batch {batch}",
                    }
                )
            else:
                continue
            del pending[name]
        if pending and time.monotonic() >= deadline:
            for name, batch in pending.items():
                outcome[name] = {
                    "ok": False,
                    "error_class": "DRY_RUN_TIMEOUT",
                    "message": f"batch {batch} of query '{name}' did not finish within "
                    f"{timeout:.0f}s",
                }
            break
        if pending:
            time.sleep(poll)
    for query in queries.values():
        if query.isActive:
            try:
                query.stop()
            except Exception as exc:  # a scratch query: nothing depends on a clean stop
                log.warning("stopping dry-run query %s: %s", query.name, exc)
    result = {"ok": all(o.get("ok") for o in outcome.values()), "queries": outcome}
    os.makedirs(os.path.dirname(result_path) or ".", exist_ok=True)
    tmp = f"{result_path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(result, f)
    os.replace(tmp, result_path)
    log.info("dry run: %s", result)
    return result
