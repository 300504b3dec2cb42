"""A real SIGKILL, sent from outside, at random instants: the worker is a process of its own
and the test `os.kill`s it while it carries out an operation of each kind, at instants
drawn from a seeded RNG (printed; ``TIDEGATE_CHAOS_SEED=N`` draws the same instants again).
Unlike the step-boundary cases (``TIDEGATE_FAULT_AT``), the worker dies wherever it is:
between a step's effect and its record, inside a transaction, mid-HTTP call. Update
verification stays on. For the whole scenario a sampler checks every 100 ms that no run has
two live drivers; after a fresh worker recovers, the operation has finished (or rolled back
to the old version, running again), and the committed output equals the ground truth."""

from __future__ import annotations

import os
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.support.chaos.harness import Chaos, enrich_rows
from tests.support.chaos.sampler import one_driver_per_run
from tests.support.chaos.scenario import (
    check_update,
    end_offsets,
    expected,
    finish,
    log_clicks,
    new_job,
    running,
)
from tests.support.sizes import CHAOS_SEED, FULL, pick
from tests.support.waiting import wait_for
from tidegate_runtime.sources.eventlog import EventLog

pytestmark = [pytest.mark.chaos, pytest.mark.e2e]

SEED = CHAOS_SEED
KILLS = pick(2, 3)  # kills per operation; each fresh worker resumes what the last one left

# kind -> (verb, body, kill horizon in s: below the operation's usual length from its claim)
KINDS: dict[str, tuple[str, dict[str, Any], float]] = {
    "submit": ("submit", {}, 2.0),
    "stop": ("stop", {}, 2.0),
    "restart": ("restart", {}, 4.0),
    "snapshot": ("snapshots", {"name": "live", "stop": True}, 2.0),
    "update-snapshot": ("update", {"strategy": "snapshot", "verify_seconds": 5}, 12.0),
    "update-drain": ("update", {"strategy": "drain", "verify_seconds": 5}, 8.0),
    "drain": ("drain", {"timeout_seconds": 300}, 3.0),
}
SMOKE = ("submit",)


@dataclass
class Kill:
    at: float  # seconds after the worker claimed the operation
    state: str  # the operation's state right after the kill
    last_step: str | None


def _operation(chaos: Chaos, op_id: int) -> dict[str, Any]:
    op: dict[str, Any] = chaos.client.get(f"/operations/{op_id}").json()
    return op


def _claimed_by(chaos: Chaos, op_id: int, pid: int) -> bool:
    with psycopg.connect(chaos.stack.database_url) as conn:
        row = conn.execute(
            "select 1 from operations where id = %s and lease_owner like %s",
            (op_id, f"%:{pid}:%"),
        ).fetchone()
    return row is not None


def _killed_at_random(
    chaos: Chaos, rng: random.Random, verb: str, job: str, body: dict[str, Any], horizon: float
) -> tuple[dict[str, Any], list[Kill]]:
    """Request the operation, then up to KILLS times: a fresh worker claims it and is
    SIGKILLed at an instant drawn from [0, horizon) after its claim. A last worker finishes
    it. ``horizon`` is below the operation's usual length, so the first kill lands."""
    chaos.stack.stop_workers()
    kills: list[Kill] = []
    op_id = chaos.request(job, verb, body or None)["id"]
    for _ in range(KILLS):
        worker = chaos.stack.start_worker()
        wait_for(
            lambda pid=worker.pid: (
                _operation(chaos, op_id)["state"] in ("succeeded", "failed")
                or _claimed_by(chaos, op_id, pid)
            ),
            bool,
            60,
            0.05,
            what=f"worker {worker.pid} to claim operation {op_id}",
        )
        claimed, at = time.monotonic(), rng.uniform(0, horizon)
        # The fault's instant, not a wait for something: the kill lands wherever the
        # worker is then; an operation that ends first ends the killing.
        while time.monotonic() - claimed < at:
            if _operation(chaos, op_id)["state"] in ("succeeded", "failed"):
                return chaos.stack.wait_operation(op_id, 600), kills
            time.sleep(0.02)
        os.kill(worker.pid, signal.SIGKILL)
        assert worker.wait(30) == -signal.SIGKILL
        op = _operation(chaos, op_id)
        steps = [s["name"] for s in op["steps"]]
        kills.append(Kill(round(at, 2), op["state"], steps[-1] if steps else None))
        chaos.expire_lease_of(worker.pid)  # it would run out by itself in 30 s
        if op["state"] in ("succeeded", "failed"):
            break
    chaos.stack.start_worker()
    return chaos.stack.wait_operation(op_id, 600), kills


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(
            k,
            marks=[] if FULL or k in SMOKE else [pytest.mark.skip(reason="under `make chaos`")],
        )
        for k in KINDS
    ],
)
def test_worker_sigkilled_at_random_instants(chaos: Chaos, tmp_path: Path, kind: str) -> None:
    rng = random.Random(f"{SEED}:{kind}")
    verb, body, horizon = KINDS[kind]
    print(f"\n[{kind}] TIDEGATE_CHAOS_SEED={SEED} kills<={KILLS} horizon={horizon}s")
    job, root, v1, v2 = new_job(chaos, tmp_path, "real-kill")
    with one_driver_per_run(chaos.run_ids) as sampler:
        old_run = None
        if kind == "submit":
            body = {"version": v1}
        else:
            old_run = running(chaos, job, v1, root)
            log_clicks(root, 100, offset_ms=20_000)  # a backlog while the operation runs
            if kind.startswith("update"):
                body = {**body, "version": v2}
        op, kills = _killed_at_random(chaos, rng, verb, job, body, horizon)
        print(f"[{kind}] kills: {kills}")
        print(f"[{kind}] operation {op['id']}: {op['state']} {op.get('error') or ''}")
        assert kills, f"no kill landed (seed {SEED}): the operation ended first"
        if kind.startswith("update"):
            assert old_run is not None
            check_update(chaos, kind, job, op, old_run, v1, tmp_path)
        else:
            assert op["state"] == "succeeded", (SEED, kills, op)
            _check(chaos, kind, job, op, old_run, root, tmp_path / "out-1")
    print(f"[{kind}] driver sampler: {sampler.summary()}")


def _check(
    chaos: Chaos,
    kind: str,
    job: str,
    op: dict[str, Any],
    old_run: int | None,
    root: Path,
    out: Path,
) -> None:
    """What a finished operation of ``kind`` left, and the output against the ground truth."""
    if kind == "drain":
        assert old_run is not None
        assert chaos.assert_one_driver_per_attempt(old_run)["state"] == "drained"
        end = end_offsets(op)
        assert end == EventLog(root).stream("clicks").latest_offsets()
        assert enrich_rows(out) == expected(root, {p: (0, o) for p, o in end.items()})
        return
    run_id = op["run_id"] if kind == "submit" else old_run
    assert run_id is not None
    run = chaos.assert_one_driver_per_attempt(run_id)
    assert run["state"] == ("stopped" if kind in ("stop", "snapshot") else "running"), run
    if kind == "restart":
        assert run["attempt"] == 1, run
    if kind == "snapshot":
        snapshots = chaos.client.get("/snapshots", params={"job": job}).json()["items"]
        assert [s["name"] for s in snapshots] == ["live"], snapshots
    finish(chaos, job, run_id, root)
    assert enrich_rows(out) == expected(root)
