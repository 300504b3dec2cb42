"""``tidegate kafka``: the local broker the README's Kafka walk-through starts (until Ctrl-C,
the same broker again on the same folder, a taken port said in one line) and ``kafka
produce``, records with Kafka timestamps dealt round a topic's partitions."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from kafka import KafkaConsumer, TopicPartition
from typer.testing import CliRunner

from app.cli import cli
from tests.support.waiting import stop_process


def test_produce_writes_records_with_kafka_timestamps_round_the_partitions(
    kafka_bootstrap: str,
) -> None:
    before = int(time.time() * 1000)
    args = ["kafka", "produce", "--bootstrap", kafka_bootstrap, "--topic", "cli-clicks"]
    result = CliRunner().invoke(cli, [*args, "--partitions", "3", "--count", "30"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {
        "sent": 30,
        "end_offsets": {"0": 10, "1": 10, "2": 10},
    }
    consumer = KafkaConsumer(bootstrap_servers=kafka_bootstrap, enable_auto_commit=False)
    try:
        parts = [TopicPartition("cli-clicks", p) for p in range(3)]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        records = []
        while len(records) < 30:
            for batch in consumer.poll(timeout_ms=2000).values():
                records.extend(batch)
    finally:
        consumer.close()
    assert {r.key for r in records} == {f"k{i}".encode() for i in range(10)}
    assert all(before <= r.timestamp <= int(time.time() * 1000) for r in records)
    again = CliRunner().invoke(cli, [*args, "--count", "3"])  # the topic exists: kept
    assert again.exit_code == 0 and json.loads(again.output)["end_offsets"] == {
        "0": 11,
        "1": 11,
        "2": 11,
    }
    endless = CliRunner().invoke(cli, args)
    assert endless.exit_code == 2 and "give --count, or a --rate" in endless.output


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_broker_runs_until_interrupted_and_says_when_its_port_is_taken(
    tmp_path: Path,
) -> None:
    port = _free_port()
    command = [sys.executable, "-c", "from app.cli import main; main()", "kafka", "broker"]
    command += ["--dir", str(tmp_path / "kafka"), "--port", str(port)]
    broker = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert broker.stdout is not None
        first = broker.stdout.readline()
        assert first.startswith(f"kafka: 127.0.0.1:{port} "), first
        taken = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert taken.returncode == 1
        assert f"cannot listen on 127.0.0.1:{port}" in taken.stdout
        assert "choose another --port" in taken.stdout
        broker.send_signal(signal.SIGINT)
        assert broker.wait(timeout=60) == 0
        assert broker.stdout.read().strip().endswith("kafka: stopped")
    finally:
        stop_process(broker, grace=10)
