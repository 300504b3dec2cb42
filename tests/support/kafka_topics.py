"""A Kafka topic as the end-to-end tests see it (tests/startpoints/test_kafka_e2e.py and the
scenarios beside it): records written with Kafka timestamps and read back from the broker, the
ground truth every expectation is computed from; the windowed counts a run should have
written; a version of pipelines/kafka_windowed_counts.py on a backend."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewPartitions

from app.devtools import jvm_deps
from tests.support.backends import Target
from tests.support.kafka_broker import create_topic
from tests.support.stack import Stack

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
WINDOW_MS, DELAY_MS = 60_000, 10_000
PARTITIONS = 4
STEP_MS = 400


class Topic:
    """A topic's records as the test wrote them, and read back from the broker: the ground
    truth every expectation is computed from."""

    def __init__(self, bootstrap: str, name: str) -> None:
        self.bootstrap, self.name, self.sent = bootstrap, name, 0
        self.last_ts = 0  # the latest event time written
        self.partitions = PARTITIONS
        create_topic(bootstrap, name, PARTITIONS)

    def add_partition(self) -> None:
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            admin.create_partitions({self.name: NewPartitions(self.partitions + 1)})
        finally:
            admin.close()
        self.partitions += 1

    def produce(self, count: int, start_ts_ms: int) -> None:
        """``count`` records, event times ``STEP_MS`` apart from ``start_ts_ms``, dealt round
        the partitions (times grow within each): key k0..k4, value a small number."""
        producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all")
        try:
            for i in range(count):
                n = self.sent + i
                producer.send(
                    self.name,
                    key=f"k{n % 5}".encode(),
                    value=str(n % 7 + 1).encode(),
                    partition=n % self.partitions,
                    timestamp_ms=start_ts_ms + i * STEP_MS,
                )
            producer.flush()
        finally:
            producer.close()
        self.sent += count
        self.last_ts = max(self.last_ts, start_ts_ms + (count - 1) * STEP_MS)

    def _consumer(self) -> KafkaConsumer:
        return KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False)

    def end(self) -> dict[int, int]:
        consumer = self._consumer()
        try:
            parts = [TopicPartition(self.name, p) for p in range(self.partitions)]
            return {tp.partition: o for tp, o in consumer.end_offsets(parts).items()}
        finally:
            consumer.close()

    def at_time(self, ts_ms: int) -> dict[int, int]:
        """Per partition, the offset of the first record at or after ``ts_ms`` (else the end)."""
        consumer = self._consumer()
        try:
            parts = [TopicPartition(self.name, p) for p in range(self.partitions)]
            found = consumer.offsets_for_times({tp: ts_ms for tp in parts})
            end = consumer.end_offsets(parts)
            return {tp.partition: (found[tp].offset if found[tp] else end[tp]) for tp in parts}
        finally:
            consumer.close()

    def records(self, ranges: dict[int, tuple[int, int]]) -> list[tuple[int, str, float]]:
        """(Kafka timestamp, key, value) of every record in ``ranges``, read from the broker."""
        consumer = self._consumer()
        out: list[tuple[int, str, float]] = []
        try:
            for partition, (start, end) in ranges.items():
                tp = TopicPartition(self.name, partition)
                consumer.assign([tp])
                consumer.seek(tp, start)
                while consumer.position(tp) < end:
                    for message in consumer.poll(timeout_ms=2000).get(tp, []):
                        if message.offset < end:
                            out.append(
                                (message.timestamp, message.key.decode(), float(message.value))
                            )
        finally:
            consumer.close()
        return out


@contextmanager
def producing(topic: Topic, start_ts_ms: int, every: float = 0.2) -> Iterator[None]:
    """Records keep arriving (10 every ``every`` seconds, times growing) until the block ends."""
    stop = threading.Event()

    def produce() -> None:
        ts = start_ts_ms
        while not stop.wait(every):
            topic.produce(10, ts)
            ts += 10 * STEP_MS

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(30)


def expected_counts(
    topic: Topic,
    ranges: list[dict[int, tuple[int, int]]],
    *,
    window_ms: int = WINDOW_MS,
    flushed: bool = False,
) -> list[tuple[Any, ...]]:
    """Windowed counts over exactly the records of ``ranges``: those closed by the watermark
    the query reached (what a run that kept its state emits), or ``flushed``, every window
    (what a drain emits)."""
    groups: dict[tuple[int, str], list[float]] = defaultdict(lambda: [0, 0.0])
    max_ts = 0
    for part in ranges:
        for ts, key, value in topic.records(part):
            max_ts = max(max_ts, ts)
            g = groups[(ts - ts % window_ms, key)]
            g[0] += 1
            g[1] += value
    return sorted(
        (start, key, int(c), s)
        for (start, key), (c, s) in groups.items()
        if flushed or start + window_ms <= max_ts - DELAY_MS
    )


def kafka_version(
    stack: Stack,
    job: str,
    target: Target,
    bootstrap: str,
    topic: str,
    out: Path,
    trigger: str = "1 SECONDS",
    window: str | None = None,
    client_options: dict[str, str] | None = None,
    extra_conf: dict[str, str] | None = None,
    jar_groups: tuple[str, ...] = ("spark-kafka",),
) -> int:
    """A version of pipelines/kafka_windowed_counts.py reading ``topic`` (its source named
    ``clicks``); ``client_options``: ``kafka.*`` settings its reader and resolver get too;
    ``extra_conf`` and ``jar_groups`` (jvm/deps.toml): more Spark conf and jars."""
    source = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, **(client_options or {})}
    jars = ",".join(jvm_deps.classpath(group, sep=",") for group in jar_groups)
    conf = target.conf(**{"spark.jars": jars, **(extra_conf or {})})
    args = ["--bootstrap", bootstrap, "--topic", topic, "--output", str(out)]
    body = {
        "app": {
            "file": target.pipeline("kafka_windowed_counts.py"),
            "args": args
            + (["--window", window] if window else [])
            + [f"--kafka-option={k}={v}" for k, v in (client_options or {}).items()],
        },
        "cluster": target.cluster,
        "conf": conf,
        "queries": [
            {
                "name": "windowed_counts",
                "sources": [{"name": "clicks", "kind": "kafka", "options": source}],
                "stateful_operators": [{"kind": "tumbling_window"}],
                "output_mode": "append",
                "trigger": trigger,
            }
        ],
    }
    r = stack.client.post(f"/jobs/{job}/versions", json=body)
    assert r.status_code == 201, r.text
    return int(r.json()["number"])


def end_offset(stack: Stack, run_id: int) -> Any:
    progress = stack.run(run_id)["progress"].get("windowed_counts", {})
    return ((progress.get("sources") or [{}])[0]).get("end_offset")


def as_spark(topic: str, offsets: dict[int, int]) -> dict[str, dict[str, int]]:
    return {topic: {str(p): o for p, o in offsets.items()}}
