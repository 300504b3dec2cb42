"""A real Apache Kafka broker (KRaft, app/devtools/kafka_broker.py) from the pinned jars: topic
creation, produce with explicit record times, fetch by offset, and ListOffsets by timestamp
(which the tansu broker of tests/support/kafka_broker.py answers wrongly)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from app.devtools.kafka_broker import Broker, kafka_broker

TOPIC = "ticks"
PARTITIONS = 4
RECORDS = 100
T0 = 1_700_000_000_000  # ms; record i is at T0 + 1000 i, in partition i % 4


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with kafka_broker(tmp_path / "kafka") as b:
        yield b


def _partitions() -> list[TopicPartition]:
    return [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]


def test_produce_and_read_back_with_offsets_and_times(broker: Broker) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=1)])
    finally:
        admin.close()

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    for i in range(RECORDS):
        producer.send(
            TOPIC,
            key=b"k%d" % i,
            value=b"v%d" % i,
            partition=i % PARTITIONS,
            timestamp_ms=T0 + 1000 * i,
        )
    producer.flush()
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    try:
        consumer.assign(_partitions())
        consumer.seek_to_beginning()
        records = []
        for _ in range(50):
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
            if len(records) >= RECORDS:
                break
        assert len(records) == RECORDS

        assert Counter(r.partition for r in records) == {
            p: RECORDS // PARTITIONS for p in range(PARTITIONS)
        }
        for r in records:
            i = int(r.value[1:])
            assert r.key == b"k%d" % i
            assert r.partition == i % PARTITIONS
            assert r.offset == i // PARTITIONS  # each partition's records in produce order
            assert r.timestamp == T0 + 1000 * i

        end = consumer.end_offsets(_partitions())
        assert end == {tp: RECORDS // PARTITIONS for tp in _partitions()}
        # Record 50 (partition 2, offset 12) is at T0 + 50 s: the first record at or after that
        # time is offset 12 in partitions 2 and 3 and offset 13 in partitions 0 and 1.
        found = consumer.offsets_for_times({tp: T0 + 50_000 for tp in _partitions()})
        assert {tp.partition: (o.offset, o.timestamp) for tp, o in found.items() if o} == {
            0: (13, T0 + 52_000),
            1: (13, T0 + 53_000),
            2: (12, T0 + 50_000),
            3: (12, T0 + 51_000),
        }
    finally:
        consumer.close()


def test_a_broker_started_again_on_its_folder_is_the_same_broker(tmp_path: Path) -> None:
    """Stopped and started again (a broker outage in a test), it listens where it did and
    holds what it held."""
    with kafka_broker(tmp_path / "kafka") as first:
        admin = KafkaAdminClient(bootstrap_servers=first.bootstrap)
        admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])
        admin.close()
        producer = KafkaProducer(bootstrap_servers=first.bootstrap, acks="all")
        for i in range(5):
            producer.send(TOPIC, value=b"v%d" % i, partition=0)
        producer.flush()
        producer.close()
    with kafka_broker(tmp_path / "kafka") as again:
        assert again.bootstrap == first.bootstrap and again.pid != first.pid
        consumer = KafkaConsumer(bootstrap_servers=again.bootstrap, enable_auto_commit=False)
        try:
            assert consumer.end_offsets([TopicPartition(TOPIC, 0)]) == {TopicPartition(TOPIC, 0): 5}
        finally:
            consumer.close()
