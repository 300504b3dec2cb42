"""PostgreSQL crashes (`pg_ctl stop -m immediate`) and restarts while an update is in flight
and while the API takes writes. The whole stack — API, workers — runs on an embedded
PostgreSQL of this test's own (the machine's shared server is never touched); Spark is the
session's local runner. Afterwards: no acknowledged write is lost, every 503 carried the
`Retry-After` docs/guarantees.md promises, the update completed (or rolled back to the old
version, running again), one driver per run at every sampled instant, and the committed
output equals the ground truth."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.support.chaos.harness import Chaos, chaos_stack
from tests.support.chaos.pg import EmbeddedPostgres, Ledger, wait_for_answers, writer
from tests.support.chaos.sampler import one_driver_per_run
from tests.support.chaos.scenario import check_update, log_clicks, new_job, running
from tests.support.sizes import CHAOS_SEED as SEED
from tests.support.sizes import FULL
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.chaos, pytest.mark.e2e]

WRITERS = 3
# Each lasts minutes (about six for drain on the shared 2-core machine): both strategies run
# under `make chaos` only.
STRATEGIES = [
    pytest.param(s, marks=[] if FULL else [pytest.mark.skip(reason="under `make chaos`")])
    for s in ("drain", "snapshot")
]


@pytest.fixture(scope="module")
def own_chaos(
    tmp_path_factory: pytest.TempPathFactory, livy_runner: str, embedded: EmbeddedPostgres
) -> Iterator[Chaos]:
    with chaos_stack(
        tmp_path_factory.mktemp("pg-crash"), livy_runner, server=embedded.url("postgres")
    ) as result:
        yield result


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_postgres_crash_during_an_update_and_api_writes(
    own_chaos: Chaos, embedded: EmbeddedPostgres, tmp_path: Path, strategy: str
) -> None:
    chaos = own_chaos
    rng = random.Random(f"{SEED}:pg:{strategy}")
    print(f"\n[pg-crash update-{strategy}] TIDEGATE_CHAOS_SEED={SEED}")
    job, root, v1, v2 = new_job(chaos, tmp_path, "pg-crash")
    ledger, stop = Ledger(), threading.Event()
    writers = [
        threading.Thread(target=writer, args=(chaos.stack.url, i, stop, ledger), daemon=True)
        for i in range(WRITERS)
    ]
    with one_driver_per_run(chaos.run_ids) as sampler:
        old_run = running(chaos, job, v1, root)
        log_clicks(root, 100, offset_ms=20_000)  # a backlog while the update runs
        for w in writers:
            w.start()
        try:
            wait_for_answers(ledger, 0, 201, WRITERS, "writes before the crash")
            body = {"version": v2, "strategy": strategy, "verify_seconds": 5}
            op_id = chaos.request(job, "update", body)["id"]
            # Crash once the update is under way, at a seeded instant into it.
            wait_for(
                lambda: chaos.client.get(f"/operations/{op_id}").json()["steps"],
                bool,
                120,
                0.05,
                what="the update's first step",
            )
            delay = rng.uniform(0, 3)
            time.sleep(delay)  # the fault's instant, not a wait for something
            embedded.crash()
            crashed_at = len(ledger.results)
            wait_for_answers(ledger, crashed_at, 503, WRITERS, "503s while PostgreSQL is down")
            ready = httpx.get(chaos.stack.url + "/readyz", timeout=10)
            assert ready.status_code == 503 and ready.headers.get("retry-after"), ready.text
            embedded.start()
            wait_for_answers(ledger, len(ledger.results), 201, WRITERS, "writes after restart")
            op = chaos.stack.wait_operation(op_id, 600)
        finally:
            stop.set()
            for w in writers:
                w.join(60)
        print(f"[pg-crash update-{strategy}] crash {delay:.2f}s into the update; ", end="")
        print(f"operation: {op['state']} {op.get('error') or ''}")
        check_update(chaos, f"update-{strategy}", job, op, old_run, v1, tmp_path)
    print(f"[pg-crash update-{strategy}] driver sampler: {sampler.summary()}")
    print(f"[pg-crash update-{strategy}] API answers: {_counts(ledger)}")

    statuses = {s for _, s, _, _ in ledger.results}
    assert statuses <= {201, 503}, sorted(
        {(s, t[:200]) for _, s, _, t in ledger.results if s not in (201, 503)}
    )
    assert ledger.retry_after and all(
        v is not None and v.isdigit() and int(v) >= 1 for v in ledger.retry_after
    ), sorted(set(map(str, ledger.retry_after)))
    acknowledged = {name for name, s, _, _ in ledger.results if s == 201}
    with psycopg.connect(chaos.stack.database_url) as conn:
        stored = {r[0] for r in conn.execute("select name from jobs").fetchall()}
    assert acknowledged <= stored, sorted(acknowledged - stored)[:20]


def _counts(ledger: Ledger) -> dict[int, int]:
    counts: dict[int, int] = {}
    for _, status, _, _ in ledger.results:
        counts[status] = counts.get(status, 0) + 1
    return counts
