"""Startpoints on a Kafka topic, on real Spark and Apache Kafka: a query of the Kafka connector
(pipelines/kafka_windowed_counts.py) started at startpoints of every type, fast-forwarded
and rewound through its checkpoint's offset log (Kafka's format), its window state kept and
its output exact against the topic itself (every record read back with its offset and
Kafka timestamp). The event log's scenario (test_startpoints_e2e.py), on a 4-partition topic."""

from __future__ import annotations

import signal
from pathlib import Path

import psutil
import pytest

from tests.operations.test_lifecycle_e2e import _job, _operate, _output
from tests.support.backends import Target
from tests.support.e2e import driver_jvms
from tests.support.kafka_topics import (
    PARTITIONS,
    STEP_MS,
    T0,
    Topic,
    as_spark,
    end_offset,
    expected_counts,
    kafka_version,
    producing,
)
from tests.support.sizes import FULL
from tests.support.stack import Stack, assert_switch, wait_until, watching_standbys

pytestmark = pytest.mark.e2e


@pytest.fixture
def bootstrap(kafka_bootstrap: str) -> str:
    return kafka_bootstrap


def test_kafka_startpoints_end_to_end_keep_state(
    clusters: Stack, target: Target, bootstrap: str, tmp_path: Path
) -> None:
    stack, job = clusters, f"kafka-startpoints-{target.cluster}"
    topic = Topic(bootstrap, f"clicks-{target.cluster}")
    out = tmp_path / "out"
    topic.produce(400, T0)  # 0:00 to 2:40
    first_end = topic.end()
    _job(stack, job)
    version = kafka_version(stack, job, target, bootstrap, topic.name, out)
    sp_url = f"/jobs/{job}/startpoints"

    # 1. A fresh query: every partition skips its first 20 records, partition 1 reads from
    # its oldest (a partition's startpoint beats the source's).
    r = stack.client.put(
        sp_url,
        json={
            "startpoints": [
                {"source": "clicks", "type": "OFFSET", "value": 20},
                {"source": "clicks", "partition": 1, "type": "OLDEST"},
            ]
        },
    )
    assert r.status_code == 200, r.text
    submit = _operate(stack, job, "submit", {"version": version})
    assert submit["state"] == "succeeded", submit
    run_id = submit["run_id"]
    wanted = as_spark(topic.name, first_end)
    wait_until(lambda: end_offset(stack, run_id), lambda end: end == wanted, 240)
    view = wait_until(lambda: stack.client.get(sp_url).json(), lambda v: v["pending"] == [], 60)
    fresh = view["applied"][0]
    assert fresh["batch_id"] is None
    assert fresh["after_offsets"] == {"0": 20, "1": 0, "2": 20, "3": 20}
    read_1 = {p: (0 if p == 1 else 20, first_end[p]) for p in range(PARTITIONS)}
    wait_until(lambda: _output(out), lambda rows: rows == expected_counts(topic, [read_1]), 120)
    assert _operate(stack, job, "stop")["state"] == "succeeded"

    # 2. A fast-forward through the checkpoint: every partition to 3:20 by the records' Kafka
    # timestamps (resolved by the broker, checked), partition 1 a little further by offset,
    # partition 3 to what arrives after the start.
    topic.produce(200, T0 + 160_000)  # 2:40 to 4:00
    skip_to = T0 + 200_000
    targets = topic.at_time(skip_to)
    targets[1] += 7
    targets[3] = topic.end()[3]
    r = stack.client.put(
        sp_url,
        json={
            "startpoints": [
                {"source": "clicks", "type": "TIMESTAMP", "value": "2026-01-01T00:03:20Z"},
                {"source": "clicks", "partition": 1, "type": "OFFSET", "value": targets[1]},
                {"source": "clicks", "partition": 3, "type": "UPCOMING"},
            ]
        },
    )
    assert r.status_code == 200, r.text
    assert _operate(stack, job, "restart")["state"] == "succeeded"
    wait_until(lambda: stack.client.get(sp_url).json(), lambda v: len(v["applied"]) == 2, 120)
    topic.produce(100, T0 + 240_000)  # 4:00 to 4:40, read on every partition
    end_a = topic.end()
    run_id = stack.client.get(f"/jobs/{job}").json()["current_run_id"]
    wait_until(lambda: end_offset(stack, run_id), lambda end: end == as_spark(topic.name, end_a))
    read_a = {p: (targets[p], end_a[p]) for p in range(PARTITIONS)}
    before_rewind = expected_counts(topic, [read_1, read_a])  # the window open at the stop kept
    wait_until(lambda: _output(out), lambda rows: rows == before_rewind, 120)
    rewrite = stack.client.get(sp_url).json()["applied"][0]
    assert rewrite["batch_id"] is not None
    assert rewrite["before_offsets"] == {str(p): o for p, o in first_end.items()}
    assert rewrite["after_offsets"] == {str(p): o for p, o in targets.items()}
    assert _operate(stack, job, "stop")["state"] == "succeeded"

    # 3. A rewind keeping state: every partition back to 3:30 by time, partition 1 to its
    # oldest record. The watermark is lowered to the first replayed record, so none is
    # dropped as late; emitted windows are emitted again over the replayed records only.
    topic.produce(100, T0 + 280_000)  # 4:40 to 5:20
    rewind_to = T0 + 210_000
    rewound = topic.at_time(rewind_to)
    rewound[1] = 0
    r = stack.client.put(
        sp_url,
        json={
            "startpoints": [
                {"source": "clicks", "type": "TIMESTAMP", "value": rewind_to},
                {"source": "clicks", "partition": 1, "type": "OLDEST"},
            ]
        },
    )
    assert r.status_code == 200, r.text
    # The API connects only to brokers an admin listed (TIDEGATE_KAFKA_PREVIEW_BROKERS; none
    # here): its preview cannot look a Kafka time up and says so instead of guessing.
    preview = stack.client.post(f"{sp_url}/preview").json()
    assert preview["rows"] == [], preview
    assert "TIDEGATE_KAFKA_PREVIEW_BROKERS" in preview["errors"][0]["error"], preview
    assert _operate(stack, job, "restart")["state"] == "succeeded"
    end_b = topic.end()
    kept_state = {p: (topic.at_time(T0 + 240_000)[p], end_a[p]) for p in range(PARTITIONS)}
    replayed = {p: (rewound[p], end_b[p]) for p in range(PARTITIONS)}
    after_rewind = expected_counts(topic, [kept_state, replayed])
    wait_until(lambda: _output(out), lambda rows: rows == sorted(before_rewind + after_rewind), 180)
    rewind = stack.client.get(sp_url).json()["applied"][0]
    assert rewind["after_offsets"] == {str(p): o for p, o in rewound.items()}

    # 4. An update by snapshot (pre-warmed, its dry run first) to a version with another
    # trigger: the state and the offsets carry over, records keep arriving, nothing is read
    # twice or skipped.
    v2 = kafka_version(stack, job, target, bootstrap, topic.name, out, trigger="2 SECONDS")
    with watching_standbys(stack, job) as watch:
        updated = _operate(stack, job, "update", {"version": v2, "verify_seconds": 5})
    assert updated["state"] == "succeeded", updated
    assert_switch(stack, job, updated, watch, prewarm=True)  # ready before the stop, go after
    dry_run = next(s["detail"] for s in updated["steps"] if s["name"] == "dry_run")
    assert dry_run.get("checked"), dry_run  # Spark planned v2 on the snapshot's state first
    topic.produce(100, T0 + 320_000)  # 5:20 to 6:00
    end_c = topic.end()
    continued = expected_counts(
        topic, [kept_state, {p: (rewound[p], end_c[p]) for p in range(PARTITIONS)}]
    )
    wait_until(lambda: _output(out), lambda rows: rows == sorted(before_rewind + continued), 180)
    assert _operate(stack, job, "stop")["state"] == "succeeded"


def test_kafka_update_by_drain_then_a_new_partition_a_driver_kill_and_a_drain(
    clusters: Stack, target: Target, bootstrap: str, tmp_path: Path
) -> None:
    """An update by drain across an incompatible change (1-minute windows to 2-minute ones,
    another output) while records keep arriving: the old run reads up to the end offsets it
    reports and emits every window, the open ones too (its flush batch); the new run starts
    at exactly the next offset of each partition. A partition is added and read; the new run's
    driver is killed and the run restarts on its own. Then a plain drain of the new run,
    records still arriving: every 2-minute window of exactly the records between the two
    ends, each record counted once."""
    stack, job = clusters, f"kafka-drain-{target.cluster}"
    topic = Topic(bootstrap, f"drained-{target.cluster}")
    out1, out2 = tmp_path / "out1", tmp_path / "out2"
    topic.produce(300, T0)  # 0:00 to 2:00
    _job(stack, job)
    v1 = kafka_version(stack, job, target, bootstrap, topic.name, out1)
    oldest = {"startpoints": [{"source": "clicks", "type": "OLDEST"}]}
    assert stack.client.put(f"/jobs/{job}/startpoints", json=oldest).status_code == 200
    run1 = _operate(stack, job, "submit", {"version": v1})["run_id"]
    wanted = as_spark(topic.name, topic.end())
    wait_until(lambda: end_offset(stack, run1), lambda end: end == wanted, 240)

    v2 = kafka_version(stack, job, target, bootstrap, topic.name, out2, window="2 minutes")
    body = {"version": v2, "strategy": "drain", "verify_seconds": 5}
    with producing(topic, T0 + 120_000), watching_standbys(stack, job) as watch:
        update = _operate(stack, job, "update", body)
    assert update["state"] == "succeeded", update
    assert_switch(stack, job, update, watch, prewarm=True)
    result = update["result"]
    end1 = {int(p): o for p, o in result["end_offsets"]["clicks"].items()}
    assert sorted(end1) == list(range(PARTITIONS)), result["end_offsets"]
    assert stack.run(run1)["state"] == "drained"
    # Every 1-minute window of exactly the records up to the drained offsets, the open too.
    read_1 = {p: (0, end1[p]) for p in range(PARTITIONS)}
    assert _output(out1) == expected_counts(topic, [read_1], flushed=True)
    assert result["startpoints"] == {"clicks": {str(p): o for p, o in end1.items()}}
    view = wait_until(
        lambda: stack.client.get(f"/jobs/{job}/startpoints").json(),
        lambda v: v["pending"] == [],
        120,
    )
    applied = view["applied"][0]  # the newest
    assert applied["run_id"] == result["run_id"] and applied["batch_id"] is None
    assert applied["after_offsets"] == {str(p): o for p, o in end1.items()}

    # A partition added while the new run reads: Spark finds it and reads it from its oldest
    # record. Then (under TIDEGATE_SUITE=full) the run's driver is killed; the run comes back
    # on its own (supervised), from its checkpoint, the new partition's offsets in it. In CI a
    # Kafka driver's kill and supervised restart is tests/pipelines/test_kafka_sink.py's.
    topic.add_partition()
    topic.produce(50, topic.last_ts + STEP_MS)  # on all 5 partitions
    new_run = result["run_id"]
    wanted = as_spark(topic.name, topic.end())
    wait_until(lambda: end_offset(stack, new_run), lambda end: end == wanted, 180)
    if FULL:
        (driver,) = wait_until(
            lambda: driver_jvms(stack.run(new_run)["tag"]), lambda found: len(found) == 1
        )
        driver.send_signal(signal.SIGKILL)
        psutil.wait_procs([driver], timeout=30)
        topic.produce(50, topic.last_ts + STEP_MS)  # while it is down
        wanted = as_spark(topic.name, topic.end())
        back = wait_until(
            lambda: stack.run(new_run),
            lambda run: run["attempt"] == 1 and run["state"] == "running",
            240,
        )
        assert back["failures"] == 1, back
        wait_until(lambda: end_offset(stack, new_run), lambda end: end == wanted, 180)

    with producing(topic, topic.last_ts + STEP_MS):  # later than all before: none is late
        drained = _operate(stack, job, "drain", {"timeout_seconds": 240})
    assert drained["state"] == "succeeded", drained
    end2 = {int(p): o for p, o in drained["result"]["end_offsets"]["clicks"].items()}
    assert sorted(end2) == list(range(PARTITIONS + 1)), end2
    assert all(end1.get(p, 0) <= end2[p] <= topic.end()[p] for p in end2)
    assert stack.run(new_run)["state"] == "drained"
    read_2 = {p: (end1.get(p, 0), end2[p]) for p in end2}
    assert _output(out2) == expected_counts(topic, [read_2], window_ms=120_000, flushed=True)
    counted = sum(row[2] for row in _output(out1)) + sum(row[2] for row in _output(out2))
    assert counted == sum(end2.values())  # every record up to the end, once (offsets from 0)
