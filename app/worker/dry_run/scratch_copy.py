"""The dry run's scratch copy: each resumed query's checkpoint copied under the checkpoint
root's ``.tidegate-dryrun/`` and one empty batch planned in each copy that holds state; also
where the driver leaves its verdict. A spare's dry run (app/worker/reconcile/spare.py) uses
the same copy. A version that starts on fresh state (an update by drain or stateless) gets a
trial instead: its queries' scratch checkpoints start empty, and each reads the last
``TRIAL_RECORDS`` records per partition that the old run committed (``plan_trial``)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from app.core.plans import StoredPlan
from app.snapshots import restore
from app.snapshots.errors import SnapshotFailed
from app.worker.core.context import WorkerContext
from tidegate_runtime.checkpoints.checkpoint import hadoop_crc, latest_commit_batch, state_operators
from tidegate_runtime.checkpoints.durable_files import write_atomic

# Per partition, the records a fresh version's trial batch reads: enough to run its code on
# real input, few enough that the batch costs next to nothing at any backlog.
TRIAL_RECORDS = 200


def plan_empty_batch(checkpoint: Path) -> int | None:
    """``offsets/N+1`` = ``offsets/N`` (N the committed batch) when the copy holds state: the
    batch a restart runs first, with no input. Returns N+1, or None (no state, nothing to
    check)."""
    state = checkpoint / "state"
    if not state.is_dir() or not any(state.iterdir()):
        return None
    batch = latest_commit_batch(checkpoint)
    if batch is None:
        return None
    data = (checkpoint / "offsets" / str(batch)).read_bytes()
    # Written anew, never in place: a restored file may be a hard link to a snapshot's blob.
    write_atomic(checkpoint / "offsets" / f".{batch + 1}.crc", hadoop_crc(data))
    write_atomic(checkpoint / "offsets" / str(batch + 1), data)
    return batch + 1


def plan_trial(
    queries: list[dict[str, Any]], positions: dict[str, dict[str, int]]
) -> dict[str, dict[str, dict[str, dict[str, int]]]]:
    """Per query of a fresh version, where each source's trial batch starts and ends: the last
    ``TRIAL_RECORDS`` records per partition before ``positions`` (the old run's committed
    offsets, by eventlog source name). Only queries whose sources are all event logs the old
    run read, and that have a record to read: another source has no cap to bound the batch."""
    trial = {}
    for query in queries:
        names = [s["name"] for s in query["sources"]]
        if not names or any(
            s["kind"] != "eventlog" or s["name"] not in positions for s in query["sources"]
        ):
            continue
        bounds = {}
        for name in names:
            end = {str(p): int(o) for p, o in positions[name].items()}
            start = {p: max(0, o - TRIAL_RECORDS) for p, o in end.items()}
            bounds[name] = {"start": start, "end": end}
        if any(b["end"][p] > b["start"][p] for b in bounds.values() for p in b["end"]):
            trial[query["name"]] = bounds
    return trial


def make_copy(
    ctx: WorkerContext,
    plan: StoredPlan,
    job_name: str,
    queries: list[dict[str, Any]],
    scratch: Path,
    positions: dict[str, dict[str, int]] | None = None,
) -> dict[str, Any]:
    """Fresh scratch copies of every resumed query; the queries to check and their batch.
    With ``positions`` (a version on fresh state), the queries' trial batches instead."""
    if positions is not None:
        trial = plan_trial(queries, positions)
        shutil.rmtree(scratch, ignore_errors=True)
        if trial:  # the queries' checkpoints and the verdict go here
            scratch.mkdir(parents=True)
        return {"scratch": str(scratch), "check": {}, "trial": trial}
    resumed = [q for q in plan["queries"] if q.get("source") and "state" in q.get("parts", [])]
    if not resumed:
        return {"scratch": str(scratch), "check": {}}
    scratch_plan: StoredPlan = {**plan, "queries": resumed}
    for attempt in range(3):
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            restore.materialise(
                ctx.factory, ctx.settings, scratch_plan, job_name, 0, queries, scratch=scratch
            )
            break
        except SnapshotFailed:
            # From a live run, Spark's maintenance may remove an old file while it is copied
            # (the files of the committed batch never go): copy again.
            if attempt == 2:
                raise
    check, operators = {}, {}
    for item in resumed:
        batch = plan_empty_batch(scratch / item["query"])
        if batch is not None:
            check[item["query"]] = batch
            operators[item["query"]] = [
                {"id": o.operator_id, "name": o.operator_name}
                for o in state_operators(scratch / item["query"])
            ]
    return {"scratch": str(scratch), "check": check, "operators": operators}


def cleanup(scratch: Path) -> None:
    shutil.rmtree(scratch, ignore_errors=True)
