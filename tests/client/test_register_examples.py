"""pipelines/register_examples.py against the live server: the example pipelines become
jobs with a version each on cluster 'local', built so the pipelines' own argument parsing
and query names accept them; running it again adds nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines import register_examples
from pipelines.dedup_events import parse_args as dedup_args
from pipelines.enrich import parse_args as enrich_args
from pipelines.key_totals import parse_args as totals_args
from pipelines.windowed_counts import parse_args as windowed_args
from tests.client.conftest import Cli, Live
from tests.conftest import ADMIN_TOKEN

ROOT = Path(__file__).resolve().parents[2]


class _Conf:
    """What parse_args reads from a SparkSession: spark.conf.get(name, default)."""

    def get(self, _name: str, default: str | None = None) -> str | None:
        return default


class _Spark:
    conf = _Conf()


def test_register_examples_creates_the_log_jobs_and_versions(
    tg: Cli, live: Live, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--root", str(tmp_path / "log"), "--out", str(tmp_path / "out"), "--json"]
    # No cluster 'local' yet: refused, nothing created.
    assert register_examples.main(argv) == 1
    assert "cluster 'local' is not registered" in capsys.readouterr().err
    assert tg.json("jobs", "list") == []

    tg.ok("clusters", "create", "local", "--kind", "livy", "--cluster-url", "http://127.0.0.1:9")
    # As a user runs it: a separate process, server and token from the environment.
    done = subprocess.run(
        [sys.executable, "-m", "pipelines.register_examples", *argv, "--count", "40"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"TIDEGATE_URL": live.url, "TIDEGATE_TOKEN": ADMIN_TOKEN, "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["jobs"] == [
        {"job": "clicks-per-minute", "version": 1, "created": True},
        {"job": "clicks-enriched", "version": 1, "created": True},
        {"job": "events-deduplicated", "version": 1, "created": True},
        {"job": "account-totals", "version": 1, "created": True},
    ]
    offsets = json.loads(
        tg.ok("events", "offsets", "--root", str(tmp_path / "log"), "--stream", "clicks").stdout
    )
    assert offsets["partitions"] == 2 and sum(offsets["latest"].values()) == 40, offsets
    events = json.loads(
        tg.ok("events", "offsets", "--root", str(tmp_path / "log"), "--stream", "events").stdout
    )
    assert sum(events["latest"].values()) == 40 + 6, events  # ids 0, 7, ..., 35 retried

    assert sorted(j["name"] for j in tg.json("jobs", "list")) == [
        "account-totals",
        "clicks-enriched",
        "clicks-per-minute",
        "events-deduplicated",
    ]
    dedup = tg.json("versions", "show", "events-deduplicated", "1")
    d = dedup_args(_Spark(), dedup["app"]["args"], managed=True)  # type: ignore[arg-type]
    assert [q["name"] for q in dedup["queries"]] == [d.query_name] == ["dedup_events"]
    assert d.stream == "events" and dedup["queries"][0]["sources"][0]["name"] == "events"
    assert dedup["conf"]["spark.sql.streaming.stateStore.providerClass"].endswith(
        "RocksDBStateStoreProvider"
    )
    totals = tg.json("versions", "show", "account-totals", "1")
    t = totals_args(_Spark(), totals["app"]["args"], managed=True)  # type: ignore[arg-type]
    assert [q["name"] for q in totals["queries"]] == [t.query_name] == ["key_totals"]
    assert totals["queries"][0]["output_mode"] == "update" and t.stream == "accounts"
    assert totals["conf"] == dedup["conf"]  # RocksDB with changelog checkpointing
    accounts = json.loads(
        tg.ok("events", "offsets", "--root", str(tmp_path / "log"), "--stream", "accounts").stdout
    )
    assert sum(accounts["latest"].values()) == 40, accounts
    windowed = tg.json("versions", "show", "clicks-per-minute", "1")
    enrich = tg.json("versions", "show", "clicks-enriched", "1")
    assert windowed["cluster"] == enrich["cluster"] == "local"
    assert windowed["app"]["file"] == str(ROOT / "pipelines" / "windowed_counts.py")
    assert enrich["app"]["file"] == str(ROOT / "pipelines" / "enrich.py")
    # The names the pipelines start are the names the versions declare (the runtime refuses
    # any other), and their argument parsing accepts the registered arguments.
    w = windowed_args(_Spark(), windowed["app"]["args"], managed=True)  # type: ignore[arg-type]
    e = enrich_args(_Spark(), enrich["app"]["args"], managed=True)  # type: ignore[arg-type]
    assert [q["name"] for q in windowed["queries"]] == [w.query_name] == ["windowed_counts"]
    assert [q["name"] for q in enrich["queries"]] == [e.query_name] == ["enrich"]
    assert windowed["queries"][0]["stateful_operators"][0]["kind"] == "tumbling_window"
    assert not enrich["queries"][0].get("stateful_operators")
    assert w.root == e.root == str(tmp_path / "log") and w.stream == "clicks"

    # Again: the same jobs and versions, nothing added.
    assert register_examples.main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert [(j["version"], j["created"]) for j in again["jobs"]] == [(1, False)] * 4
    assert len(tg.json("versions", "list", "clicks-per-minute")) == 1
