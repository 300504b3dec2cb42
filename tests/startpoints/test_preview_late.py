"""Issue 53: a startpoint preview says, per query that would replay records, the event-time
watermark it would start with (the checkpoint's, or lower when the rewind lowers it) and how
many replayed records lie behind it: those Spark's stateful operators may drop as late."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from tests.startpoints.test_resolve import T0, write_checkpoint
from tests.support.api import make_current_run, version_body
from tidegate_runtime.sources.eventlog import EventLog, NewRecord

URL = "/api/v1/jobs/late/startpoints"
# Partition 0's records out of time order, as a producer with a skewed clock writes them:
# offset 3 is 25 s older than offset 0. Partition 1 in order, one a second.
TIMES = {0: [30, 31, 32, 5, 33, 34, 35, 36, 37, 38], 1: list(range(30, 40))}


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


@pytest.fixture
def late_job(client: TestClient, cluster: str, tmp_path: Path) -> dict[str, str]:
    root = tmp_path / "log"
    stream = EventLog(root).create_stream("skewed", 2)
    for p, seconds in TIMES.items():
        stream.append(p, [NewRecord(T0 + s * 1000, "k", "1") for s in seconds])
    opts = {"root": str(root), "stream": "skewed"}
    source = {"name": "events", "kind": "eventlog", "options": opts}
    body = version_body(queries=[{"name": "q", "sources": [source]}])
    assert client.post("/api/v1/jobs", json={"name": "late"}).status_code == 201
    assert client.post("/api/v1/jobs/late/versions", json=body).status_code == 201
    return opts


def _preview(client: TestClient, db: Engine, settings: Any, watermark_s: int) -> dict[str, Any]:
    run_id, _ = make_current_run(db, "late", state="stopped")
    ck = settings.resolved_checkpoint_root / "late" / str(run_id) / "q"
    write_checkpoint(ck, 4, '{"0": 10, "1": 10}', watermark_ms=T0 + watermark_s * 1000)
    oldest = {"source": "events", "type": "OLDEST"}
    assert client.put(URL, json={"startpoints": [oldest]}).is_success
    r = client.post(f"{URL}/preview")
    assert r.status_code == 200, r.text
    preview: dict[str, Any] = r.json()
    assert preview["errors"] == [] and len(preview["late"]) == 1, preview
    return preview


def test_a_rewind_that_lowers_the_watermark_counts_the_skewed_record_left_behind(
    client: TestClient, late_job: dict[str, str], db: Engine, settings: Any
) -> None:
    late = _preview(client, db, settings, watermark_s=36)["late"][0]
    # Lowered to 1 ms before the earliest first replayed record (30 s on both partitions):
    # offset 3 of partition 0 (5 s) is still behind it.
    assert late == {
        "source": "events",
        "query": "q",
        "replayed": 20,
        "watermark": _iso(T0 + 36_000),
        "start_watermark": _iso(T0 + 29_999),
        "lowered": True,
        "behind": 1,
        "note": late["note"],
    }
    assert "lowers it" in late["note"] and "1 of the 20 replayed records" in late["note"]


def test_a_watermark_already_below_the_replay_is_kept_and_nothing_is_behind_it(
    client: TestClient, late_job: dict[str, str], db: Engine, settings: Any
) -> None:
    late = _preview(client, db, settings, watermark_s=2)["late"][0]
    assert (late["lowered"], late["behind"]) == (False, 0)
    assert late["watermark"] == late["start_watermark"] == _iso(T0 + 2_000)
    assert "keeps it" in late["note"]


def test_a_query_without_a_watermark_drops_nothing(
    client: TestClient, late_job: dict[str, str], db: Engine, settings: Any
) -> None:
    late = _preview(client, db, settings, watermark_s=-T0 // 1000)["late"][0]
    assert late["watermark"] is None and late["behind"] == 0 and late["replayed"] == 20
    assert "no event-time watermark" in late["note"]
