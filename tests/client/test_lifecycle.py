"""Lifecycle commands against the live API with no worker: operations are accepted and stay
pending, which is what ``submit``/``stop`` without ``--wait`` need. ``--wait`` is tested with
a tiny fake worker thread that moves operations on in the database, step by step, as the
real worker commits them (the real worker needs Spark; tests/worker covers it)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from sqlalchemy import select

from app.client.wait import progress_fields, render
from app.core.db import make_sessionmaker, transaction
from app.operations.models import Operation
from app.snapshots.export import ExportProgress
from tests.client.conftest import Cli, Live

Script = list[tuple[str, dict[str, Any]]]  # (state, fields to set), one per poll-ish tick


@contextmanager
def fake_worker(live: Live, script: Script, every: float = 0.15) -> Iterator[None]:
    """Wait for the next pending operation, then play ``script`` on it (what a worker does:
    claim it, commit steps and interim results, finish it)."""
    factory = make_sessionmaker(live.engine)
    done = threading.Event()

    def play() -> None:
        deadline = time.monotonic() + 10
        op_id = None
        while op_id is None and time.monotonic() < deadline and not done.is_set():
            with factory() as session:
                op_id = session.scalar(
                    select(Operation.id).where(Operation.state == "pending").order_by(Operation.id)
                )
            time.sleep(0.02)
        for state, fields in script:
            time.sleep(every)
            with transaction(factory) as session:
                op = session.get(Operation, op_id)
                assert op is not None
                op.state = state
                steps = fields.pop("add_steps", [])
                if steps:
                    now = datetime.now(UTC).isoformat()
                    op.steps = [*op.steps, *({"at": now, **s} for s in steps)]
                for key, value in fields.items():
                    setattr(op, key, value)
                if state in ("succeeded", "failed"):
                    op.finished_at = datetime.now(UTC)
                elif op.started_at is None:
                    op.started_at = datetime.now(UTC)

    thread = threading.Thread(target=play, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(15)


SUBMIT_OK: Script = [
    ("running", {"add_steps": [{"name": "create_run", "detail": {"run_id": 7}}]}),
    ("running", {"add_steps": [{"name": "await_submitted", "detail": None}]}),
    ("succeeded", {"result": {"run_id": 7, "backend_id": "batch-7"}}),
]


def test_submit_prints_the_operation_and_returns_at_once(tg: Cli, job: str) -> None:
    result = tg.ok("submit", "clicks", "--version", "1")
    assert result.stdout.strip() == "operation 1 submit pending"
    assert "tidegate wait 1" in result.stderr
    op = tg.json("operations", "show", "1")
    assert op["state"] == "pending" and op["params"]["version"] == 1
    assert op["idempotency_key"].startswith("cli-")  # generated: the CLI's retries are safe
    assert [o["id"] for o in tg.json("operations", "clicks")] == [1]  # 'operations JOB' = list
    assert "submit" in tg.ok("operations", "list", "clicks").stdout
    assert tg.yaml("operations", "show", "1")["kind"] == "submit"


def test_submit_errors(tg: Cli, job: str, version_file: Path, tmp_path: Path) -> None:
    tg.fails(4, "submit", "nope", "--version", "1")
    tg.fails(4, "submit", "clicks", "--version", "9")
    assert tg("submit", "clicks").exit_code == 2  # --version is required: click's usage error
    rp = tmp_path / "rp.yaml"
    rp.write_text("windowed_counts: {mode: initialize}\n")
    line = tg.fails(
        2, "submit", "clicks", "--version", "1", "--snapshot", "s", "--resume-point", str(rp)
    )
    assert "--snapshot and --resume-point exclude each other" in line
    assert "--snapshot-job goes with --snapshot" in tg.fails(
        2, "submit", "clicks", "-v", "1", "--snapshot-job", "other"
    )
    tg.ok("submit", "clicks", "--version", "1")
    busy = tg.fails(3, "submit", "clicks", "--version", "1")
    assert "busy with operation 1" in busy and busy.endswith("follow it with: tidegate wait 1")


def test_idempotency_key_makes_a_rerun_safe(tg: Cli, job: str, version_file: Path) -> None:
    tg.ok("versions", "create", "clicks", "-f", str(version_file))
    first = tg.json("submit", "clicks", "--version", "1", "--idempotency-key", "deploy-42")
    again = tg.json("submit", "clicks", "--version", "1", "--idempotency-key", "deploy-42")
    assert again["id"] == first["id"]  # the same operation, no second submission
    line = tg.fails(2, "submit", "clicks", "--version", "2", "--idempotency-key", "deploy-42")
    assert "already used for a different request" in line


def test_stop_cancel_drain_restart_need_a_run(tg: Cli, job: str) -> None:
    assert "no active run to stop" in tg.fails(3, "stop", "clicks")
    assert "no active run to cancel" in tg.fails(3, "cancel", "clicks")
    assert "no running run to drain" in tg.fails(3, "drain", "clicks")
    assert "never run" in tg.fails(3, "restart", "clicks")
    tg.fails(4, "stop", "nope")


def test_stop_and_cancel_a_running_job(tg: Cli, job: str, running: Callable[[], int]) -> None:
    run_id = running()
    stop = tg.json("stop", "clicks", "--grace", "30")
    assert stop["kind"] == "stop" and stop["state"] == "pending" and stop["run_id"] == run_id
    assert stop["params"] == {"timeout_seconds": 30}
    assert "busy" in tg.fails(3, "restart", "clicks")
    cancel = tg.json("cancel", "clicks")  # cancel is never refused as busy: it is the way out
    assert cancel["kind"] == "cancel"
    assert [o["kind"] for o in tg.json("operations", "clicks")] == ["cancel", "stop"]


def test_drain_and_restart_a_running_job(
    tg: Cli, live: Live, job: str, running: Callable[[], int]
) -> None:
    run_id = running()
    with fake_worker(live, [("succeeded", {"result": {"run_id": run_id, "attempt": 1}})]):
        restart = tg.ok("restart", "clicks", "--wait")
    assert restart.stdout.splitlines()[0].startswith("operation 1 restart succeeded in ")
    assert tg.json("operations", "show", "1")["run_id"] == run_id
    drain = tg.json("drain", "clicks", "--drain-timeout", "60")
    assert drain["kind"] == "drain" and drain["params"] == {"timeout_seconds": 60}
    assert drain["run_id"] == run_id and drain["state"] == "pending"
    assert "busy" in tg.fails(3, "restart", "clicks")  # one operation per job at a time
    assert tg("drain", "clicks", "--drain-timeout", "5").exit_code == 2  # min 10: usage


def test_wait_follows_to_success(tg: Cli, live: Live, job: str) -> None:
    with fake_worker(live, [(state, dict(fields)) for state, fields in SUBMIT_OK]):
        result = tg.ok("submit", "clicks", "--version", "1", "--wait")
    assert result.stdout.splitlines()[0].startswith("operation 1 submit succeeded in ")
    assert "RUN ID      7" in result.stdout and "BACKEND ID  batch-7" in result.stdout
    # not a terminal: one line per change, so a CI log tells the story
    assert "done: create_run run_id=7" in result.stderr
    assert "done: await_submitted" in result.stderr
    assert result.stderr.splitlines()[-1] == "operation 1 submit: succeeded"


def test_wait_exits_1_when_the_operation_fails(
    tg: Cli, live: Live, job: str, running: Callable[[], int]
) -> None:
    running()
    script: Script = [
        ("running", {"add_steps": [{"name": "request_stop", "detail": None}]}),
        ("failed", {"error": "the driver did not stop within 30s"}),
    ]
    with fake_worker(live, script):
        result = tg("stop", "clicks", "--wait", "-o", "json")
    assert result.exit_code == 1, result.output
    assert '"state": "failed"' in result.stdout  # the final document still comes out
    assert result.stderr.splitlines()[-1] == (
        "error: operation 1 (stop) failed: the driver did not stop within 30s"
    )


def test_wait_command_and_its_timeout(tg: Cli, live: Live, job: str) -> None:
    tg.ok("submit", "clicks", "--version", "1")
    line = tg.fails(7, "wait", "1", "--timeout", "0.2")
    assert "still pending" in line and "tidegate wait 1" in line
    with fake_worker(live, [("succeeded", {"result": {"run_id": 3}})], every=0.05):
        done = tg.json("wait", "1")
    assert done["state"] == "succeeded" and done["result"] == {"run_id": 3}
    tg.fails(4, "wait", "99")


def test_live_display_shows_steps_and_progress() -> None:
    """What a terminal shows while following: state, steps done, and the progress fields the
    operation carries (a drain's backlog, a snapshot's bytes copied)."""
    drain = {
        "id": 5,
        "kind": "drain",
        "job": "clicks",
        "state": "running",
        "steps": [{"name": "request_drain", "detail": {"run_state": "draining"}}],
        "result": {
            "run_id": 2,
            "backlog": {"windowed_counts": {"records": 120, "sources": {"clicks": 120}}},
            "end_offsets": {"clicks": {"0": 500}},
        },
    }
    assert progress_fields(drain) == {"run_id": 2, "backlog_records": 120}
    # What the worker writes onto a snapshot operation while it copies (the worker-level
    # test_export_reports_progress_while_it_copies observes the real thing).
    figures = ExportProgress(None)
    figures.bytes_total, figures.files_total = 2 << 20, 6
    figures.file_done("state/0/0/1.delta", 1 << 20)
    figures.file_done("state/0/0/.1.delta.crc", 0)
    figures.file_done("offsets/0", 0)
    snapshot = {
        "id": 6,
        "kind": "snapshot",
        "job": "clicks",
        "state": "running",
        "steps": [],
        "result": {"snapshot": "s1", "run_id": 2, **figures.figures()},
    }
    assert progress_fields(snapshot)["bytes_copied"] == 1 << 20
    console = Console(record=True, width=100)
    console.print(render(drain, time.monotonic()))
    console.print(render(snapshot, time.monotonic()))
    text = console.export_text()
    assert "operation 5 drain job clicks running" in text
    assert "steps done (1): request_drain" in text and "backlog_records=120" in text
    assert "1.0 MiB / 2.0 MiB" in text and "files_copied=3" in text and "3 / 6" in text
    assert "phase=exporting" in text
    done = {**snapshot, "state": "succeeded"}  # the final result is not shown as progress
    assert progress_fields(done) == {}


LISTS_AND_SHOWS = [
    ("jobs", "list"),
    ("jobs", "show", "clicks"),
    ("versions", "list", "clicks"),
    ("versions", "show", "clicks", "1"),
    ("clusters", "list"),
    ("clusters", "show", "local"),
    ("runs", "clicks"),
    ("runs", "show", "RUN"),
    ("runs", "progress", "RUN"),
    ("operations", "clicks"),
    ("operations", "show", "1"),
    ("audit", "--job", "clicks"),
    ("tokens", "list"),
    ("status",),
    ("list-snapshots",),
    ("snapshots", "list", "clicks"),
    ("startpoints", "list", "clicks"),
]


def test_output_formats_parse(tg: Cli, job: str, running: Callable[[], int]) -> None:
    """Every list and show: -o json and -o yaml give the same document; tables have no
    trailing blanks (awk and grep read them)."""
    run_id = str(running())
    tg.ok("stop", "clicks")
    for args in LISTS_AND_SHOWS:
        argv = [run_id if a == "RUN" else a for a in args]
        as_json = tg.json(*argv)
        assert as_json == tg.yaml(*argv), argv
        table = tg.ok(*argv)
        assert table.output.strip(), argv  # rows on stdout, or "No …" on stderr
        assert not any(line != line.rstrip() for line in table.stdout.splitlines()), argv


def test_runs(tg: Cli, job: str, running: Callable[..., int]) -> None:
    run_id = running()
    table = tg.ok("runs", "clicks").stdout  # 'runs JOB' is 'runs list JOB'
    assert table.splitlines()[1].split()[:3] == [str(run_id), "1", "running"]
    assert "windowed_counts@4" in table  # each query's latest batch
    shown = tg.ok("runs", "show", str(run_id)).stdout
    assert "batch-1" in shown and "windowed_counts" in shown
    assert tg.json("runs", "list", "clicks")[0]["progress"]["windowed_counts"]["batch_id"] == 4
    assert "No progress reported yet." in tg.ok("runs", "progress", str(run_id)).stderr
    tg.fails(4, "runs", "show", "999")
    tg.fails(4, "runs", "nope")
    assert tg("runs", "show", "x").exit_code == 2  # not a number: usage
