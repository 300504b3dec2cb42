"""Startpoints, snapshots, resume points and compatibility through the CLI, as far as they go
without Spark: what is set, listed, refused; exports and updates are accepted as operations."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from app.runtime.eventlog import EventLog, NewRecord
from tests.cli.conftest import Cli

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
    listed = tg.json("list-snapshots")
    assert [(s["job"], s["name"]) for s in listed] in ([], [("clicks", "nightly")])
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
    )
    assert op["kind"] == "update" and op["state"] == "pending"
    assert op["params"]["version"] == 2 and op["params"]["snapshot_name"] == "before-v2"
    assert op["params"]["strategy"] == "snapshot"
