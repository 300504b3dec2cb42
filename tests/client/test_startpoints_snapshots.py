"""Startpoints, snapshots, resume points and compatibility through the CLI, as far as they go
without Spark: what is set, listed, refused; exports and updates are accepted as operations."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.core.db import make_sessionmaker, transaction
from app.jobs.models import Job
from app.runs.models import Run
from app.snapshots.checkpoint_files import checkpoint_path
from app.snapshots.models import Snapshot
from app.startpoints.models import StartpointApplication
from tests.client.conftest import Cli, Live
from tests.client.test_lifecycle import Script, fake_worker
from tidegate_runtime.sources import positions as rt
from tidegate_runtime.sources.eventlog import EventLog, NewRecord

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


@pytest.fixture
def logged_job(tg: Cli, tmp_path: Path) -> str:
    """A job whose source is a real event log (2 partitions, 50 records each)."""
    root = tmp_path / "log"
    stream = EventLog(root).create_stream("clicks", 2)
    for p in range(2):
        stream.append(p, [NewRecord(T0 + i * 1000, "k", "1") for i in range(50)])
    version = tmp_path / "v.json"
    version.write_text(
        json.dumps(
            {
                "app": {"file": "/opt/pipelines/windowed_counts.py"},
                "cluster": "local",
                "queries": [
                    {
                        "name": "windowed_counts",
                        "sources": [
                            {
                                "name": "clicks",
                                "kind": "eventlog",
                                "options": {"root": str(root), "stream": "clicks"},
                            }
                        ],
                        "stateful_operators": [{"kind": "tumbling_window"}],
                    }
                ],
            }
        )
    )
    tg.ok("clusters", "create", "local", "--kind", "livy", "--cluster-url", "http://127.0.0.1:9")
    tg.ok("jobs", "create", "clicks")
    tg.ok("versions", "create", "clicks", "-f", str(version))
    return "clicks"


def test_startpoints_set_list_preview_withdraw(tg: Cli, logged_job: str) -> None:
    out = tg.ok("startpoints", "set", "clicks", "clicks", "--timestamp", "2026-01-01T00:00:30Z")
    assert out.stdout.strip() == "1 startpoint(s) set"
    assert "tidegate restart clicks" in out.stderr  # when they apply
    tg.ok("startpoints", "set", "clicks", "clicks", "--partition", "1", "--offset", "0")
    pending = tg.json("startpoints", "list", "clicks")["pending"]
    assert [(s["partition"], s["type"], s["value"]) for s in pending] == [
        (None, "TIMESTAMP", T0 + 30_000),
        (1, "OFFSET", 0),
    ]
    table = tg.ok("startpoints", "list", "clicks").stdout
    assert "all" in table and "TIMESTAMP" in table  # no partition = every partition
    # People read the TIMESTAMP's value as ISO-8601 UTC; JSON keeps the API's epoch ms.
    assert "2026-01-01T00:00:30Z" in table and str(T0 + 30_000) not in table
    set_at = re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+\S+\s*$", table.splitlines()[1])
    assert set_at, table  # the SET column too
    preview = tg.json("startpoints", "preview", "clicks")
    assert {"rows", "errors"} <= set(preview)
    tg.ok("startpoints", "preview", "clicks")

    tg.ok("startpoints", "withdraw", "clicks", "clicks", "--partition", "1")
    tg.fails(4, "startpoints", "withdraw", "clicks", "clicks", "--partition", "1")
    tg.ok("startpoints", "withdraw", "clicks", "clicks")
    assert tg.json("startpoints", "list", "clicks")["pending"] == []


def test_startpoints_from_a_file(tg: Cli, logged_job: str, tmp_path: Path) -> None:
    bulk = tmp_path / "sp.yaml"
    bulk.write_text(
        "- {source: clicks, partition: 0, type: OFFSET, value: 10}\n"
        "- {source: clicks, partition: 1, type: OLDEST}\n"
    )
    assert tg.ok("startpoints", "set", "clicks", "-f", str(bulk)).stdout.strip() == (
        "2 startpoint(s) set"
    )
    assert len(tg.json("startpoints", "list", "clicks")["pending"]) == 2


def test_startpoint_errors(tg: Cli, logged_job: str) -> None:
    line = tg.fails(2, "startpoints", "set", "clicks", "nope", "--oldest")
    assert "unknown source 'nope'" in line
    assert "exclude each other" in tg.fails(
        2, "startpoints", "set", "clicks", "clicks", "--oldest", "--offset", "3"
    )
    assert "give a position" in tg.fails(2, "startpoints", "set", "clicks", "clicks")
    assert "not a timestamp" in tg.fails(
        2, "startpoints", "set", "clicks", "clicks", "--timestamp", "yesterday"
    )
    # --restart needs a run to restart; nothing is half-written
    assert "never run" in tg.fails(
        3, "startpoints", "set", "clicks", "clicks", "--oldest", "--restart"
    )
    assert tg.json("startpoints", "list", "clicks")["pending"] == []
    tg.fails(4, "startpoints", "list", "nope")
    tg.fails(4, "startpoints", "revert", "clicks", "999")


def test_startpoints_with_restart_follow_the_restart(
    tg: Cli, logged_job: str, running: Callable[[], int]
) -> None:
    running()
    out = tg.ok("startpoints", "set", "clicks", "clicks", "--upcoming", "--restart")
    assert out.stdout.splitlines() == [
        "1 startpoint(s) set; restarting clicks",
        "operation 1 restart pending",
    ]


def test_snapshots(tg: Cli, job: str, running: Callable[[], int]) -> None:
    assert tg.json("list-snapshots") == [] and tg.json("list-snapshots", "clicks") == []
    assert "No snapshots." in tg.ok("list-snapshots").stderr
    tg.fails(4, "snapshots", "show", "clicks", "nope")
    tg.fails(4, "snapshots", "delete", "clicks", "nope", "--yes")
    assert "never run" in tg.fails(3, "save-snapshot", "clicks", "before-v2")
    running()
    op = tg.json("export-snapshot", "clicks", "nightly")
    assert op["kind"] == "snapshot" and op["params"]["name"] == "nightly"
    assert op["params"]["stop"] is False
    assert "busy" in tg.fails(3, "save-snapshot", "clicks", "before-v2")
    # reserved when accepted: listed as not ready until the export completes
    listed = tg.json("list-snapshots")
    assert [(s["job"], s["name"], s["state"]) for s in listed] == [
        ("clicks", "nightly", "creating")
    ]
    row = tg.ok("list-snapshots", "clicks").stdout.splitlines()[1]
    assert row.split()[-3:] == ["clicks", "nightly", "(creating)"]
    assert "name" in tg.fails(2, "save-snapshot", "clicks", "../etc")


def test_snapshot_retention(tg: Cli, job: str) -> None:
    doc = tg.json("snapshots", "retention", "clicks", "--keep-last", "5", "--max-age", "7d")
    assert doc["keep_last"] == 5 and doc["max_age_seconds"] == 7 * 86_400
    assert tg.json("snapshots", "retention", "clicks")["keep_last"] == 5
    assert tg.json("snapshots", "retention", "clicks", "--clear")["keep_last"] is None
    tg.fails(2, "snapshots", "retention", "clicks", "--max-age", "soon")


def test_compat_build_and_update_refusals(tg: Cli, job: str, tmp_path: Path) -> None:
    line = tg.fails(2, "compat", "clicks", "--version", "1", "--snapshot", "nope")
    assert "no snapshot named 'nope'" in line
    assert "give --snapshot" in tg.fails(2, "compat", "clicks", "--version", "1")
    tg.fails(4, "compat", "clicks", "--version", "7", "--snapshot", "nope")
    tg.fails(2, "resume-points", "build", "clicks", "--version", "1", "--snapshot", "nope")
    rp = tmp_path / "rp.yaml"
    rp.write_text("windowed_counts: {mode: initialize}\n")
    doc = tg.json("compat", "clicks", "--version", "1", "--resume-point", str(rp))
    assert doc["compatible"] is True
    assert [(q["query"], q["outcome"]) for q in doc["queries"]] == [
        ("windowed_counts", "initialize")
    ]
    assert (
        "can start from resume point"
        in tg.ok("compat", "clicks", "--version", "1", "--resume-point", str(rp)).stdout
    )
    line = tg.fails(3, "update", "clicks", "--version", "1", "--strategy", "snapshot")
    assert "clicks" in line
    assert tg("update", "clicks", "--version", "1", "--strategy", "sideways").exit_code == 2


def test_update_is_accepted_as_an_operation(
    tg: Cli, job: str, version_file: Path, running: Callable[..., int]
) -> None:
    tg.ok("versions", "create", "clicks", "-f", str(version_file))
    running()
    op = tg.json(
        "update",
        "clicks",
        "--version",
        "2",
        "--snapshot-name",
        "before-v2",
        "--verify-seconds",
        "5",
        "--first-batch-seconds",
        "90",
    )
    assert op["kind"] == "update" and op["state"] == "pending"
    assert op["params"]["version"] == 2 and op["params"]["snapshot_name"] == "before-v2"
    assert op["params"]["strategy"] == "snapshot"
    # Both verification bounds reach the request body (and so the worker's _verify_bounds).
    assert op["params"]["verify_seconds"] == 5 and op["params"]["first_batch_seconds"] == 90
    assert tg("update", "clicks", "--version", "2", "--first-batch-seconds", "0").exit_code == 2


# ---- happy paths, on what a worker would have left in the database and on disk -------------


def _stopped_run(live: Live, job: str = "clicks", version: int = 1) -> int:
    """A run that ran and stopped (what the worker leaves after a stop)."""
    with transaction(make_sessionmaker(live.engine)) as session:
        row = session.query(Job).filter_by(name=job).one()
        run = Run(
            job_id=row.id,
            version_id=next(v.id for v in row.versions if v.number == version),
            state="stopped",
            attempt=0,
            failures=0,
            backend_id="batch-1",
            created_by="test",
            progress={},
        )
        session.add(run)
        session.flush()
        row.current_run_id, row.state = run.id, "stopped"
        return int(run.id)


def _write_checkpoint(path: Path, batch: int, line: str) -> Path:
    """A checkpoint the way Spark writes it, with ``batch`` planned and committed. (The live
    server's checkpoint root outlives each test's database, and run ids start again.)"""
    shutil.rmtree(path, ignore_errors=True)
    (path / "offsets").mkdir(parents=True, exist_ok=True)
    (path / "commits").mkdir(parents=True, exist_ok=True)
    (path / "metadata").write_text('{"id":"q"}')
    meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": T0, "conf": {}})
    (path / "offsets" / str(batch)).write_text(f"v1\n{meta}\n{line}")
    (path / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return path


def _snapshot(
    live: Live, run_id: int, name: str, size: int, created: datetime, partitions: int = 2
) -> None:
    """A ready snapshot of the job's windowed_counts query, as an export records it."""
    with transaction(make_sessionmaker(live.engine)) as session:
        job = session.query(Job).filter_by(name="clicks").one()
        session.add(
            Snapshot(
                job_id=job.id,
                name=name,
                state="ready",
                run_id=run_id,
                version_number=1,
                queries={
                    "windowed_counts": {
                        "batch_id": 3,
                        "sources": [{"name": "clicks", "offset": {"0": 40, "1": 38}}],
                        "watermark_ms": T0,
                        "next_watermark_ms": T0,
                        "conf": {"spark.sql.shuffle.partitions": str(partitions)},
                        "operators": [
                            {
                                "id": 0,
                                "name": "stateStoreSave",
                                "partitions": partitions,
                                "stores": ["default"],
                                "key_schema": None,
                                "value_schema": None,
                            }
                        ],
                        "declared": {
                            "stateful_operators": [{"kind": "tumbling_window"}],
                            "sources": ["clicks"],
                            "output_mode": "append",
                        },
                        "files": 12,
                        "size_bytes": size,
                    }
                },
                size_bytes=size,
                bytes_written=size,
                file_count=12,
                created_by="test",
                created_at=created,
                completed_at=created,
            )
        )


def test_list_compat_delete_and_coordinates_of_real_snapshots(
    tg: Cli, live: Live, job: str, version_file: Path, tmp_path: Path
) -> None:
    run_id = _stopped_run(live)
    _snapshot(live, run_id, "small", 1536, datetime(2026, 1, 1, 0, 0, 0, tzinfo=UTC))
    _snapshot(live, run_id, "nightly", 3_250_586, datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))

    table = tg.ok("list-snapshots").stdout.splitlines()
    assert table[0].split() == ["TIME", "SIZE", "JOB", "NAME", "SNAPSHOT", "NAME"]
    assert [line.split() for line in table[1:]] == [  # newest first, ISO times, sizes for people
        ["2026-01-02T03:04:05Z", "3.1", "MiB", "clicks", "nightly"],
        ["2026-01-01T00:00:00Z", "1.5", "KiB", "clicks", "small"],
    ]
    assert [(s["name"], s["size_bytes"]) for s in tg.json("list-snapshots", "clicks")] == [
        ("nightly", 3_250_586),
        ("small", 1536),
    ]
    shown = tg.ok("snapshots", "show", "clicks", "nightly").stdout
    assert "3.1 MiB" in shown and "0:stateStoreSave/2" in shown

    # compat --snapshot: the version with the snapshot's 2 state partitions starts from it;
    # one with 4 (the README's version 3) is refused with the reason, exit 3.
    ok = tg.ok("compat", "clicks", "--version", "1", "--snapshot", "nightly").stdout
    assert ok.splitlines()[-1] == "version 1 can start from snapshot nightly", ok
    assert ok.splitlines()[1].split()[:2] == ["windowed_counts", "resume"]
    doc = tg.json("compat", "clicks", "--version", "1", "--snapshot", "nightly")
    assert doc["compatible"] is True and doc["problems"] == []
    assert [(q["query"], q["outcome"]) for q in doc["queries"]] == [("windowed_counts", "resume")]
    v3 = tmp_path / "version-3.yaml"
    v3.write_text(version_file.read_text().replace("partitions: 2", "partitions: '4'"))
    tg.ok("versions", "create", "clicks", "-f", str(v3))
    refused = tg("compat", "clicks", "--version", "2", "--snapshot", "nightly", "-o", "json")
    assert refused.exit_code == 3, refused.output
    (problem,) = json.loads(refused.stdout)["problems"]
    assert problem["kind"] == "state_partitions" and "4" in problem["detail"]

    # delete: gone from the list; deleting again is 'not found'
    deleted = tg.ok("snapshots", "delete", "clicks", "small", "--yes").stdout
    assert deleted.strip() == "snapshot small of clicks deleted"
    assert [s["name"] for s in tg.json("list-snapshots")] == ["nightly"]
    tg.fails(4, "snapshots", "delete", "clicks", "small", "--yes")

    # coordinates: the last run's latest committed batch per query, read from its checkpoint
    with make_sessionmaker(live.engine)() as session:
        spec = session.get(Run, run_id).version.queries[0]  # type: ignore[union-attr]
    _write_checkpoint(
        checkpoint_path(live.checkpoint_root, "clicks", run_id, spec), 5, '{"0":40,"1":38}'
    )
    out = tg.ok("snapshots", "coordinates", "clicks").stdout.splitlines()
    assert out[0] == f"run {run_id} of clicks (version 1, stopped)"
    assert out[1].split() == ["JOB", "RUN", "QUERY", "BATCH"]
    assert out[2].split() == ["clicks", str(run_id), "windowed_counts", "5"]
    coords = tg.json("snapshots", "coordinates", "clicks")["coordinates"]
    assert coords == [{"job": "clicks", "run": run_id, "query": "windowed_counts", "batch_id": 5}]


def test_save_snapshot_waits_for_the_export_and_the_stop(
    tg: Cli, live: Live, job: str, running: Callable[[], int]
) -> None:
    run_id = running()
    script: Script = [
        ("running", {"add_steps": [{"name": "export", "detail": {"bytes": 3 << 20}}]}),
        ("running", {"add_steps": [{"name": "stop", "detail": {"run_state": "stopped"}}]}),
        (
            "succeeded",
            {"result": {"run_id": run_id, "snapshot": "before-v2", "size_bytes": 3 << 20}},
        ),
    ]
    with fake_worker(live, script):
        result = tg.ok("save-snapshot", "clicks", "before-v2", "--grace", "30", "--wait")
    assert result.stdout.splitlines()[0].startswith("operation 1 snapshot succeeded in ")
    assert "before-v2" in result.stdout
    assert "done: export" in result.stderr and "done: stop run_state=stopped" in result.stderr
    op = tg.json("operations", "show", "1")
    assert op["params"] == {"name": "before-v2", "stop": True, "timeout_seconds": 30}


def test_startpoints_revert_puts_the_checkpoint_back(tg: Cli, live: Live, logged_job: str) -> None:
    run_id = _stopped_run(live)
    with make_sessionmaker(live.engine)() as session:
        spec = session.get(Run, run_id).version.queries[0]  # type: ignore[union-attr]
    checkpoint = _write_checkpoint(
        checkpoint_path(live.checkpoint_root, "clicks", run_id, spec), 3, '{"0":50,"1":50}'
    )
    tg.ok("startpoints", "set", "clicks", "clicks", "--offset", "10")
    (pending,) = tg.json("startpoints", "list", "clicks")["pending"]
    # The runtime applies it when the query starts (as tidegate_runtime.driver.runtime does) ...
    source = spec["sources"][0]
    applied = rt.apply_to_checkpoint(
        checkpoint,
        "windowed_counts",
        "clicks",
        0,
        "eventlog",
        source["options"],
        [rt.Startpoint(pending["id"], "clicks", None, "OFFSET", 10)],
    )
    assert json.loads((checkpoint / "offsets" / "3").read_text().split("\n")[2]) == {
        "0": 10,
        "1": 10,
    }
    # ... and reports it (the runtime channel; recorded as the worker's report would be)
    with transaction(make_sessionmaker(live.engine)) as session:
        job_row = session.query(Job).filter_by(name="clicks").one()
        row = StartpointApplication(
            job_id=job_row.id,
            run_id=run_id,
            attempt=0,
            query="windowed_counts",
            source="clicks",
            startpoints=[{"id": pending["id"], "type": "OFFSET", "value": 10}],
            checkpoint=applied.checkpoint,
            batch_id=applied.batch_id,
            before_offsets=applied.before,
            after_offsets=applied.after,
            original_file=applied.original_file,
        )
        session.add(row)
        session.flush()
        app_id = int(row.id)

    out = tg.ok("startpoints", "revert", "clicks", str(app_id)).stdout
    assert out.strip() == f"application {app_id} reverted: offsets back to {{'0': 50, '1': 50}}"
    assert json.loads((checkpoint / "offsets" / "3").read_text().split("\n")[2]) == {
        "0": 50,
        "1": 50,
    }
    (listed,) = tg.json("startpoints", "list", "clicks")["applied"]
    assert listed["id"] == app_id and listed["reverted_at"]
    assert "already reverted" in tg.fails(3, "startpoints", "revert", "clicks", str(app_id))
