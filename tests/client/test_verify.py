"""``tidegate verify JOB``: the run's batches, read against counted in and dropped late; exit 1
when something was lost (app/runs/accounting.py; its cases: tests/runs/test_accounting.py)."""

from __future__ import annotations

from collections.abc import Callable

from app.core.db import make_sessionmaker, transaction
from app.runs.models import QueryProgress
from tests.client.conftest import Cli, Live
from tests.runs.test_accounting import write_offsets


def _reported(live: Live, run_id: int, batches: dict[int, tuple[int, int]]) -> None:
    with transaction(make_sessionmaker(live.engine)) as session:
        for batch, (rows, dropped) in batches.items():
            payload = {"batch_id": batch, "num_input_rows": rows, "rows_dropped_late": dropped}
            session.add(
                QueryProgress(
                    run_id=run_id, query="windowed_counts", batch_id=batch, payload=payload
                )
            )


def test_verify_prints_each_batch_and_fails_when_rows_were_dropped(
    tg: Cli, live: Live, job: str, running: Callable[..., int]
) -> None:
    run_id = running(job)
    folder = live.checkpoint_root / job / str(run_id) / "windowed_counts"
    write_offsets(folder, {0: 20, 1: 30, 2: 35})
    _reported(live, run_id, {1: (10, 0), 2: (5, 0)})
    shown = tg.ok("verify", job)
    assert "COUNTED IN" in shown.stdout and "none dropped as late" in shown.output
    doc = tg.json("verify", job, "--run", str(run_id))
    assert doc["complete"] is True and doc["queries"][0]["read"] == 15

    _reported(live, run_id, {3: (0, 0)})  # no offsets/3: cannot be checked, not a loss
    assert tg.ok("verify", job).exit_code == 0
    _reported(live, run_id, {2: (5, 4)})  # batch 2 again, now saying 4 rows dropped late
    failed = tg("verify", job)
    assert failed.exit_code == 1, failed.output
    assert "windowed_counts: 4 rows dropped as late" in failed.output

    error = tg.fails(2, "verify", "other", "--run", str(run_id))
    assert f"run {run_id} is a run of {job}, not of other" in error
