"""Two workers and a burst of 50 concurrent, conflicting lifecycle requests on one job, over
real HTTP: exactly one is accepted, every other one is a 409 problem, and the one accepted
has its effect once (one run, one driver per attempt)."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN
from tests.support.chaos.harness import Chaos, enrich_version
from tests.support.stack import wait_until
from tidegate_runtime.sources.eventlog import EventLog
from tidegate_runtime.sources.eventlog_producer import produce

pytestmark = [pytest.mark.chaos, pytest.mark.e2e]

# Fixed: a burst must land while the first accepted operation is still running; a longer
# one would outlive it, and a later request would rightly be accepted.
BURST = 50


def _burst(
    chaos: Chaos, requests: list[tuple[str, dict[str, Any] | None, str | None]]
) -> list[httpx.Response]:
    """Send every (path, body, idempotency key) at once: a barrier lines the threads up."""
    barrier = threading.Barrier(len(requests))
    client = httpx.Client(
        base_url=chaos.stack.url + "/api/v1",
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        timeout=60,
        limits=httpx.Limits(max_connections=len(requests)),
    )

    def send(item: tuple[str, dict[str, Any] | None, str | None]) -> httpx.Response:
        path, body, key = item
        headers = {"Idempotency-Key": key} if key else {}
        barrier.wait(30)
        return client.post(path, json=body, headers=headers)

    with client, ThreadPoolExecutor(len(requests)) as pool:
        return list(pool.map(send, requests))


def _accepted_once(responses: list[httpx.Response]) -> dict[str, Any]:
    codes = sorted({r.status_code for r in responses})
    assert set(codes) <= {202, 409}, [
        (r.status_code, r.text) for r in responses if r.status_code not in (202, 409)
    ]
    accepted = {r.json()["id"] for r in responses if r.status_code == 202}
    assert len(accepted) == 1, accepted
    for r in responses:
        if r.status_code == 409:
            assert r.headers["content-type"].startswith("application/problem+json")
            assert r.json()["detail"]
    op: dict[str, Any] = next(r.json() for r in responses if r.status_code == 202)
    return op


def test_fifty_conflicting_requests_one_effect(chaos: Chaos, tmp_path: Path) -> None:
    job = f"conflict-{uuid.uuid4().hex[:8]}"
    root, out = tmp_path / "log", tmp_path / "out"
    EventLog(root).create_stream("clicks", 2)
    produce(str(root), "clicks", 2, rate=0, count=100, start_ts_ms=1_767_225_600_000)
    assert chaos.client.post("/jobs", json={"name": job}).status_code == 201
    version = enrich_version(chaos, job, root, out)
    chaos.stack.stop_workers()
    chaos.stack.start_worker()
    chaos.stack.start_worker()

    # An idle job: every request is a submit; one wins, the others find it busy.
    submits = _burst(chaos, [(f"/jobs/{job}/submit", {"version": version}, None)] * BURST)
    op = _accepted_once(submits)
    done = chaos.stack.wait_operation(op["id"])
    assert done["state"] == "succeeded", done
    run_id = done["run_id"]
    runs = chaos.client.get(f"/jobs/{job}/runs").json()["items"]
    assert [r["id"] for r in runs] == [run_id]
    assert chaos.assert_one_driver_per_attempt(run_id)["state"] == "running"

    # A running job: stops (all with one Idempotency-Key) against restarts and submits.
    key = f"stop-{uuid.uuid4().hex}"
    mixed: list[tuple[str, dict[str, Any] | None, str | None]] = []
    for i in range(BURST):
        mixed.append(
            [
                (f"/jobs/{job}/stop", None, key),
                (f"/jobs/{job}/restart", None, None),
                (f"/jobs/{job}/submit", {"version": version}, None),
            ][i % 3]
        )
    op = _accepted_once(_burst(chaos, mixed))
    done = chaos.stack.wait_operation(op["id"])
    assert done["state"] == "succeeded", done
    run = chaos.assert_one_driver_per_attempt(run_id)
    if op["kind"] == "stop":
        assert (run["state"], run["attempt"]) == ("stopped", 0)
    else:
        assert (op["kind"], run["state"], run["attempt"]) == ("restart", "running", 1)
        assert chaos.operate(job, "cancel")["state"] == "succeeded"
    ops = chaos.client.get(f"/jobs/{job}/operations", params={"limit": 500}).json()["items"]
    assert [o["kind"] for o in ops][-2:] == [op["kind"], "submit"]
    assert len([o for o in ops if o["kind"] != "cancel"]) == 2, ops
    wait_until(lambda: chaos.drivers(run_id), lambda d: d == [], 60)
