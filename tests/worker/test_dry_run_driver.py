"""The dry-run driver on a backend: submitted once under its own tag (a resumed worker finds
it instead of submitting again), never as a run, and bounded in time."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

from app.backends.base import AppState
from app.runtime import trial_batch as runtime_dryrun
from app.worker import preflight as dryrun
from app.worker.context import WorkerContext
from tests.worker.conftest import FakeBackend

VERSION = SimpleNamespace(
    cluster=None,
    number=3,
    conf={"spark.sql.shuffle.partitions": "2"},
    app={"file": "/apps/new.py", "args": ["--x", "1"]},
    queries=[
        {
            "name": "counts",
            "trigger": "5 SECONDS",
            "checkpoint_location": "/real/checkpoint",
            "stateful_operators": [{"kind": "tumbling_window"}],
            "sources": [{"name": "clicks", "kind": "eventlog", "options": {"root": "/log"}}],
        }
    ],
)


def test_submitted_once_under_its_own_tag(
    ctx: WorkerContext, fake: FakeBackend, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    first = dryrun.submit(ctx, 41, VERSION, "job", scratch, {"counts": 5})
    # A worker that died before recording the step runs it again: the driver is found.
    again = dryrun.submit(ctx, 41, VERSION, "job", scratch, {"counts": 5})
    assert fake.submits == 1 and again["backend_id"] == first["backend_id"] and again["found"]
    spec = fake.apps[first["backend_id"]].spec
    assert spec.tag == "tidegate-dryrun-41" and not spec.tag.startswith("tidegate-run-")
    assert spec.env == {}  # no run token: it is no run and cannot call the API as one
    assert "spark.tidegate.run_id" not in spec.conf
    assert spec.conf["spark.tidegate.dry_run"] == "true"
    assert spec.conf["spark.tidegate.checkpoint_dir"] == str(scratch)
    assert json.loads(spec.conf[runtime_dryrun.CHECK_CONF]) == ["counts"]
    (query,) = json.loads(spec.conf["spark.tidegate.queries"])
    assert query["checkpoint_location"] is None  # never the real checkpoint
    assert (spec.file, spec.args) == ("/apps/new.py", ["--x", "1"])


def test_outcome_is_the_drivers_result_file(
    ctx: WorkerContext, fake: FakeBackend, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    submitted = dryrun.submit(ctx, 7, VERSION, "job", scratch, {"counts": 5})
    fake.apps[submitted["backend_id"]].state = AppState.SUCCEEDED
    refused = {
        "ok": False,
        "queries": {"counts": {"ok": False, "error_class": "X", "message": "differs"}},
    }
    (scratch / runtime_dryrun.RESULT_FILE).write_text(json.dumps(refused))
    outcome = dryrun.await_outcome(ctx, VERSION, submitted["backend_id"], time.time(), scratch, 60)
    assert outcome["ok"] is False and outcome["queries"] == refused["queries"]
    assert dryrun.problems(outcome, {}) == ["query 'counts': differs [X]"]


def test_a_driver_without_a_result_or_too_slow_is_a_refusal(
    ctx: WorkerContext, fake: FakeBackend, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    done = dryrun.submit(ctx, 8, VERSION, "job", scratch, {"counts": 5})
    fake.apps[done["backend_id"]].state = AppState.FAILED
    outcome = dryrun.await_outcome(ctx, VERSION, done["backend_id"], time.time(), scratch, 60)
    assert outcome["ok"] is False and "without a dry-run result" in outcome["message"]
    assert "boom: bad config" in outcome["message"]  # the driver's own words

    slow = dryrun.submit(ctx, 9, VERSION, "job", scratch, {"counts": 5})
    fake.apps[slow["backend_id"]].state = AppState.RUNNING
    # The bound counts from the submission (a resumed worker does not start it again).
    outcome = dryrun.await_outcome(ctx, VERSION, slow["backend_id"], time.time() - 61, scratch, 60)
    assert outcome["ok"] is False and outcome["timeout"] and "within 60s" in outcome["message"]
    assert fake.kills == [slow["backend_id"]]
