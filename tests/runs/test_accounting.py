"""``tidegate verify`` (app/runs/accounting.py, issue 53): per query and batch, the records
the run's checkpoint says it read against what Spark counted in and dropped as late, through
the API (the CLI: tests/client/test_verify.py). Real Spark: tests/operations/test_lifecycle_e2e.py::
test_rows_dropped_late_on_real_spark."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine

from tests.support.api import make_current_run, version_body

# Batch N's end offsets of the one event-log partition; batch 2 read 10 records, batch 3 5.
ENDS = {0: 20, 1: 20, 2: 30, 3: 35}


def write_offsets(folder: Path, batches: dict[int, int]) -> None:
    """A committed checkpoint of one event-log source with one partition: batch N ends at
    ``batches[N]`` (what was there before is replaced: run ids repeat across tests)."""
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "offsets").mkdir(parents=True)
    (folder / "commits").mkdir()
    meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 0, "conf": {}})
    for n, end in batches.items():
        (folder / "offsets" / str(n)).write_text(f'v1\n{meta}\n{{"0": {end}}}')
        (folder / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def _setup(
    client: TestClient, db: Engine, settings: Any, counted: dict[int, tuple[int, int]]
) -> int:
    client.post("/api/v1/clusters", json={"name": "local", "kind": "livy", "url": "http://x:9"})
    client.post("/api/v1/jobs", json={"name": "j"})
    client.post("/api/v1/jobs/j/versions", json=version_body())
    run_id, token = make_current_run(db, "j")
    write_offsets(settings.resolved_checkpoint_root / "j" / str(run_id) / "events", ENDS)
    for batch, (rows, dropped) in counted.items():
        report = {
            "query": "events",
            "batch_id": batch,
            "num_input_rows": rows,
            "state_operators": [{"operator_name": "agg", "num_rows_dropped_by_watermark": dropped}],
        }
        r = client.post(
            f"/api/v1/runs/{run_id}/progress",
            headers={"Authorization": f"Bearer {token}"},
            json=report,
        )
        assert r.status_code == 204, r.text
    return run_id


def test_a_run_that_lost_nothing_says_so(client: TestClient, db: Engine, settings: Any) -> None:
    run_id = _setup(client, db, settings, {1: (0, 0), 2: (10, 0), 3: (5, 0)})
    account = client.get(f"/api/v1/runs/{run_id}/accounting").json()
    [q] = account["queries"]
    assert [(b["batch_id"], b["read"], b["counted_in"]) for b in q["batches"]] == [
        (1, 0, 0),
        (2, 10, 10),
        (3, 5, 5),
    ]
    assert (q["read"], q["not_counted"], q["dropped_late"], q["unknown"]) == (15, 0, 0, [])
    assert account["complete"] is True
    assert account["verdict"] == "every record read was counted in; none dropped as late"


def test_records_not_counted_in_and_rows_dropped_late_are_named_per_batch(
    client: TestClient, db: Engine, settings: Any
) -> None:
    # Batch 0's start is not in the checkpoint; batch 2 counted 8 of the 10 it read (a source
    # that skipped records), batch 3 dropped 3 rows as late.
    run_id = _setup(client, db, settings, {0: (20, 0), 2: (8, 0), 3: (5, 3)})
    account = client.get(f"/api/v1/runs/{run_id}/accounting").json()
    [q] = account["queries"]
    by_batch = {b["batch_id"]: b for b in q["batches"]}
    assert by_batch[0]["read"] is None and by_batch[0]["not_counted"] is None
    assert (by_batch[2]["read"], by_batch[2]["counted_in"], by_batch[2]["not_counted"]) == (
        10,
        8,
        2,
    )
    assert (by_batch[3]["not_counted"], by_batch[3]["dropped_late"]) == (0, 3)
    assert (q["not_counted"], q["dropped_late"], q["unknown"]) == (2, 3, [0])
    assert account["complete"] is False
    assert "events: 2 records read were not counted in by Spark" in account["verdict"]
    assert "events: 3 rows dropped as late" in account["verdict"]
    assert "batches [0] cannot be checked" in account["verdict"]
