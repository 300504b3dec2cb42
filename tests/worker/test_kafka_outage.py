"""A Kafka broker down during a drain, on real Spark and Apache Kafka: the drain cannot read to
its end; it runs out of time and stops the run at a batch boundary instead, saying the query
could not reach its brokers. Nothing it half-read is used: with the broker back, a restart
resumes from that checkpoint, and a drain then emits every window of exactly the topic's
records, each counted once."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.devtools.kafka_broker import kafka_broker
from tests.operations.test_lifecycle_e2e import _job, _operate, _output
from tests.support.backends import Target
from tests.support.kafka_topics import (
    PARTITIONS,
    STEP_MS,
    T0,
    Topic,
    as_spark,
    end_offset,
    expected_counts,
    kafka_version,
)
from tests.support.stack import Stack, wait_until

pytestmark = pytest.mark.e2e

# The reader gives up on an unreachable broker within seconds, not Kafka's default minute.
QUICK = {"kafka.default.api.timeout.ms": "4000", "kafka.request.timeout.ms": "3000"}
DRAIN_TIMEOUT = 20


def test_a_drain_with_its_broker_down_stops_cleanly_and_a_later_drain_is_exact(
    clusters: Stack, target: Target, tmp_path: Path
) -> None:
    stack, job, out = clusters, f"kafka-outage-{target.cluster}", tmp_path / "out"
    workdir = tmp_path / "kafka"  # the broker's data: it comes back as the same broker
    with kafka_broker(workdir) as broker:
        topic = Topic(broker.bootstrap, f"outage-{target.cluster}")
        topic.produce(200, T0)
        _job(stack, job)
        version = kafka_version(
            stack, job, target, broker.bootstrap, topic.name, out, client_options=QUICK
        )
        oldest = {"startpoints": [{"source": "clicks", "type": "OLDEST"}]}
        assert stack.client.put(f"/jobs/{job}/startpoints", json=oldest).status_code == 200
        run_id = _operate(stack, job, "submit", {"version": version})["run_id"]
        wanted = as_spark(topic.name, topic.end())
        wait_until(lambda: end_offset(stack, run_id), lambda end: end == wanted, 240)
        read_before = topic.end()

    # The broker is down: the drain's bounded run cannot learn where the topic ends. (Its
    # reads give up within 4 s, QUICK: the timeout leaves room for a few of them.)
    failed = _operate(stack, job, "drain", {"timeout_seconds": DRAIN_TIMEOUT})
    assert failed["state"] == "failed", failed
    assert f"did not finish within {DRAIN_TIMEOUT}s" in failed["error"], failed["error"]
    assert "stopped at a batch boundary" in failed["error"], failed["error"]
    assert "failed" in failed["error"] and "Timeout" in failed["error"], failed["error"]
    run = stack.run(run_id)
    assert run["state"] == "stopped" and not run["drain"].get("drained_at"), run
    # What the run committed is what it read before the outage: not one record past it.
    assert end_offset(stack, run_id) == as_spark(topic.name, read_before)

    with kafka_broker(workdir) as broker:
        assert broker.bootstrap == topic.bootstrap
        assert _operate(stack, job, "restart")["state"] == "succeeded"
        topic.produce(100, topic.last_ts + STEP_MS)
        wanted = as_spark(topic.name, topic.end())
        wait_until(lambda: end_offset(stack, run_id), lambda end: end == wanted, 240)
        drained = _operate(stack, job, "drain", {"timeout_seconds": 240})
        assert drained["state"] == "succeeded", drained
        end = {int(p): o for p, o in drained["result"]["end_offsets"]["clicks"].items()}
        assert end == topic.end()
        everything = {p: (0, end[p]) for p in range(PARTITIONS)}
        assert _output(out) == expected_counts(topic, [everything], flushed=True)
        assert sum(row[2] for row in _output(out)) == sum(end.values())
