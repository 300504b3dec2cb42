"""``tidegate kafka``: a local Apache Kafka broker and records for it, for demos (the README's
Kafka walk-through) and trying tidegate against a real topic. ``kafka broker`` runs the pinned
broker that ``make install`` fetched (app/devtools/kafka_broker.py) until Ctrl-C; ``kafka
produce`` writes records with Kafka timestamps, as ``events produce`` does for the event log."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path
from typing import Annotated

import typer

kafka_app = typer.Typer(
    no_args_is_help=True,
    help="A local Kafka broker ('kafka broker') and records for it ('kafka produce').",
)

BootstrapOption = Annotated[
    str, typer.Option("--bootstrap", help="kafka.bootstrap.servers, e.g. 127.0.0.1:9092.")
]


@kafka_app.command("broker")
def broker_command(
    folder: Annotated[
        Path, typer.Option("--dir", help="Where the broker keeps its data and log.")
    ] = Path(".tidegate/kafka"),
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port on 127.0.0.1.")] = 9092,
) -> None:
    """Run one Apache Kafka broker (KRaft, broker and controller in one JVM) on 127.0.0.1 until
    Ctrl-C. Started again on the same --dir, it is the same broker with its topics.

    Example: tidegate kafka broker --dir .tidegate/kafka --port 9092
    """
    from app.devtools.jvm_deps import MissingJarsError
    from app.devtools.kafka_broker import kafka_broker

    stop = threading.Event()
    # Set here, not left to Python's KeyboardInterrupt: a shell without job control starts
    # background commands with SIGINT ignored, and Python then keeps it ignored.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        with kafka_broker(folder.absolute(), port=port) as broker:
            typer.echo(f"kafka: {broker.bootstrap} (log {broker.log_path}); Ctrl-C stops it")
            while not stop.wait(1.0):
                pass
    except MissingJarsError as exc:
        raise typer.BadParameter(str(exc)) from None
    except OSError as exc:  # the port is taken
        typer.echo(f"kafka: cannot listen on 127.0.0.1:{port} ({exc}); choose another --port")
        raise typer.Exit(1) from None
    typer.echo("kafka: stopped")


@kafka_app.command("produce")
def produce_command(
    bootstrap: BootstrapOption,
    topic: Annotated[str, typer.Option("--topic", help="The topic (created if missing).")],
    partitions: Annotated[int, typer.Option(min=1, help="Partitions of a new topic.")] = 1,
    rate: Annotated[float, typer.Option(min=0, help="Records per second; 0 = at once.")] = 0,
    count: Annotated[
        int | None, typer.Option(min=1, help="Records to write; omit to run until Ctrl-C.")
    ] = None,
    keys: Annotated[int, typer.Option(min=1, help="Number of distinct keys k0..kN-1.")] = 10,
) -> None:
    """Write records (key kI, value a small number as text, Kafka timestamp = now), dealt round
    the partitions, and print the topic's end offsets.

    Example: tidegate kafka produce --bootstrap 127.0.0.1:9092 --topic clicks --rate 20
    """
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    if count is None and rate == 0:
        raise typer.BadParameter("give --count, or a --rate to run until interrupted")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    except TopicAlreadyExistsError:
        pass
    finally:
        admin.close()
    known = len(_partitions(bootstrap, topic))
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    sent = 0
    try:
        while count is None or sent < count:
            producer.send(
                topic,
                key=f"k{sent % keys}".encode(),
                value=str(sent % 7 + 1).encode(),
                partition=sent % known,
                timestamp_ms=int(time.time() * 1000),
            )
            sent += 1
            if rate:
                time.sleep(1 / rate)
    except KeyboardInterrupt:
        pass
    finally:
        producer.flush()
        producer.close()
    ends = {str(p): o for p, o in sorted(_ends(bootstrap, topic).items())}
    typer.echo(json.dumps({"sent": sent, "end_offsets": ends}))


def _partitions(bootstrap: str, topic: str) -> list[int]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        return sorted(consumer.partitions_for_topic(topic) or [])
    finally:
        consumer.close()


def _ends(bootstrap: str, topic: str) -> dict[int, int]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        parts = [TopicPartition(topic, p) for p in _partitions(bootstrap, topic)]
        return {tp.partition: o for tp, o in consumer.end_offsets(parts).items()}
    finally:
        consumer.close()
