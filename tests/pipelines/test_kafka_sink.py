"""Spark's Kafka sink under tidegate, stated and tested as **at-least-once**: a driver killed in
the middle of a batch, the run restarted on its own from its checkpoint; every input record
reaches the output topic, and the only copies are records of the batch that was under way at
the kill (it runs again from its planned offsets). Then a stateless update hands the committed
offsets to the next version, which writes each later record once. On real Spark and Apache
Kafka; ground truth read back from both topics (pipelines/kafka_relay.py)."""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

import psutil
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from app.devtools import jvm_deps
from tests.operations.test_lifecycle_e2e import _operate
from tests.support.backends import Target
from tests.support.e2e import driver_jvms
from tests.support.kafka_broker import create_topic
from tests.support.stack import Stack, wait_until
from tidegate_runtime.checkpoints import checkpoint as cp

pytestmark = pytest.mark.e2e

POLICY = {"min_backoff": "1s", "max_backoff": "10s", "stable_period": "10m"}
RECORDS, PARTITIONS, PER_BATCH = 240, 2, 20


def _produce(bootstrap: str, topic: str) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for i in range(RECORDS):
            producer.send(topic, key=f"k{i % 5}".encode(), value=f"v{i}".encode(), partition=i % 2)
        producer.flush()
    finally:
        producer.close()


def _origins(bootstrap: str, topic: str) -> list[tuple[int, int]]:
    """(partition, offset) of the input record each output record copies, in topic order."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    out: list[tuple[int, int]] = []
    try:
        parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        end = consumer.end_offsets(parts)
        while any(consumer.position(tp) < end[tp] for tp in parts):
            for messages in consumer.poll(timeout_ms=2000).values():
                for m in messages:
                    partition, offset, _ = m.value.decode().split(":", 2)
                    out.append((int(partition), int(offset)))
    finally:
        consumer.close()
    return out


def _committed(checkpoint: Path, topic: str) -> tuple[int | None, dict[int, int]]:
    """The latest committed batch and the input offsets it read up to."""
    batch = cp.latest_commit_batch(checkpoint)
    if batch is None:
        return None, {}
    line = cp.read_offsets(checkpoint, batch)[1][0] or "{}"
    return batch, {int(p): o for p, o in json.loads(line).get(topic, {}).items()}


def _version(
    stack: Stack,
    job: str,
    target: Target,
    bootstrap: str,
    source: str,
    sink: str,
    *,
    per_batch: int,
    delay: int = 100,
) -> int:
    """A version of the relay: ``per_batch`` records a batch at most, ``delay`` ms a record."""
    args = ["--bootstrap", bootstrap, "--input", source, "--output-topic", sink]
    args += ["--max-offsets-per-trigger", str(per_batch), "--row-delay-ms", str(delay)]
    reads = {"kafka.bootstrap.servers": bootstrap, "subscribe": source}
    body = {
        "app": {"file": target.pipeline("kafka_relay.py"), "args": args},
        "cluster": target.cluster,
        "conf": target.conf(**{"spark.jars": jvm_deps.classpath("spark-kafka", sep=",")}),
        "queries": [
            {
                "name": "relay",
                "sources": [{"name": "clicks", "kind": "kafka", "options": reads}],
                "sink": {"format": "kafka", "options": {"topic": sink}},
                "trigger": "1 SECONDS",
            }
        ],
    }
    r = stack.client.post(f"/jobs/{job}/versions", json=body)
    assert r.status_code == 201, r.text
    return int(r.json()["number"])


def test_a_kafka_sink_is_at_least_once_its_copies_bounded_by_the_batch_under_way(
    clusters: Stack, target: Target, kafka_bootstrap: str, tmp_path: Path
) -> None:
    stack, job = clusters, f"kafka-relay-{target.cluster}"
    source, sink = f"relay-in-{target.cluster}", f"relay-out-{target.cluster}"
    create_topic(kafka_bootstrap, source, PARTITIONS)
    create_topic(kafka_bootstrap, sink, PARTITIONS)
    _produce(kafka_bootstrap, source)
    r = stack.client.post("/jobs", json={"name": job, "restart_policy": POLICY})
    assert r.status_code == 201, r.text
    first = _version(stack, job, target, kafka_bootstrap, source, sink, per_batch=PER_BATCH)
    oldest = {"startpoints": [{"source": "clicks", "type": "OLDEST"}]}
    assert stack.client.put(f"/jobs/{job}/startpoints", json=oldest).status_code == 200
    run_id = _operate(stack, job, "submit", {"version": first})["run_id"]
    checkpoint = stack.checkpoint_root / job / str(run_id) / "relay"

    def under_way() -> bool:
        """A batch after the latest commit has written some of its records already."""
        batch, read = _committed(checkpoint, source)
        return batch is not None and any(
            o >= read.get(p, 0) for p, o in _origins(kafka_bootstrap, sink)
        )

    wait_until(under_way, bool, 240, every=0.1)
    (driver,) = driver_jvms(stack.run(run_id)["tag"])
    driver.send_signal(signal.SIGKILL)
    psutil.wait_procs([driver], timeout=30)
    before = Counter(_origins(kafka_bootstrap, sink))
    batch, _ = _committed(checkpoint, source)
    assert batch is not None
    _, start = cp.read_offsets(checkpoint, batch)
    planned = cp.uncommitted_batches(checkpoint)  # the batch under way at the kill, if any

    everything = {(i % 2, i // 2) for i in range(RECORDS)}
    wait_until(lambda: set(_origins(kafka_bootstrap, sink)), lambda seen: seen == everything, 300)
    run = stack.run(run_id)
    assert run["failures"] == 1 and run["attempt"] == 1, run

    # A stateless update (a new version, faster): the run stops at a batch boundary and the
    # next version starts on a fresh checkpoint at exactly its committed offsets.
    faster = _version(stack, job, target, kafka_bootstrap, source, sink, per_batch=100, delay=0)
    update = {"version": faster, "strategy": "stateless", "verify_seconds": 3}
    updated = _operate(stack, job, "update", update)
    assert updated["state"] == "succeeded", updated
    ended = {str(p): RECORDS // PARTITIONS for p in range(PARTITIONS)}
    assert updated["result"]["end_offsets"] == {"clicks": ended}, updated["result"]
    assert updated["result"]["startpoints"] == {"clicks": ended}
    _produce(kafka_bootstrap, source)  # as many again, read by the new version only
    everything |= {(i % 2, RECORDS // 2 + i // 2) for i in range(RECORDS)}
    wait_until(lambda: set(_origins(kafka_bootstrap, sink)), lambda seen: seen == everything, 300)
    assert _operate(stack, job, "stop")["state"] == "succeeded"

    copies = Counter(_origins(kafka_bootstrap, sink))
    assert set(copies) == everything  # nothing lost
    twice = {origin for origin, n in copies.items() if n > 1}
    print(f"killed mid-batch: {bool(planned)}; records written twice: {len(twice)}")
    assert all(n <= 2 for n in copies.values()), copies.most_common(3)
    if planned:  # killed mid-batch: that batch ran again and wrote its records again
        (rerun,) = planned
        low = {int(p): o for p, o in json.loads(start[0] or "{}").get(source, {}).items()}
        high = {
            int(p): o
            for p, o in json.loads(cp.read_offsets(checkpoint, rerun)[1][0] or "{}")
            .get(source, {})
            .items()
        }
        in_the_batch = {(p, o) for p in high for o in range(low.get(p, 0), high[p])}
        assert twice and twice <= in_the_batch, (sorted(twice), low, high)
        assert twice == {o for o in before if o in in_the_batch}  # exactly what it had written
        assert len(twice) <= PER_BATCH
    else:  # the batch committed just before the kill: nothing runs twice
        assert twice == set()
