"""A real single-node Apache Kafka broker (KRaft: broker and controller in one JVM) for tests.

The jars are the ``kafka-broker`` group of jvm/deps.toml, fetched at install time
(app/devtools/jvm_deps.py); nothing is downloaded here. Everything the broker writes (data,
server.properties, its log) stays under ``workdir``, and it listens on 127.0.0.1 only.

    with kafka_broker(tmp_path) as broker:
        KafkaProducer(bootstrap_servers=broker.bootstrap)
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from app.devtools import jvm_deps

HOST = "127.0.0.1"
JAR_GROUP = "kafka-broker"
# Small and quick to start: a test broker holds a few topics of a few records.
JVM_OPTS = ["-Xmx256m", "-Xms64m", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]
START_TIMEOUT_S = 60.0
STOP_GRACE_S = 15.0

# Console output, which the subprocess redirects to the log file (with anything the JVM itself
# prints); the request and state-change loggers are chatty at INFO.
LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.state.name = state.change.logger
logger.state.level = WARN
"""


@dataclass(frozen=True)
class Broker:
    bootstrap: str  # "127.0.0.1:<port>", for bootstrap_servers / kafka.bootstrap.servers
    log_path: Path
    pid: int


def _free_port(port: int = 0) -> int:
    """A port that was free a moment ago (the usual race applies; good enough for tests).

    A given port is checked too: something else listening there would pass the readiness probe.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # As the broker's own listener does: connections of a broker stopped a moment ago,
        # in TIME_WAIT, do not keep it from its port; a listener there still does.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((HOST, port))
        return int(s.getsockname()[1])


def _cluster_id() -> str:
    """Kafka's Uuid text form: 16 random bytes, base64url without padding, not starting with '-'
    (which the storage tool's argument parser would take for an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def server_properties(workdir: Path, port: int, controller_port: int) -> str:
    """One node, replication factor 1 everywhere, no retention (tests use historical timestamps
    and retention is by record time), one partition per internal topic (faster start)."""
    return f"""\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@{HOST}:{controller_port}
listeners=PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller_port}
advertised.listeners=PLAINTEXT://{HOST}:{port}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs={workdir / "data"}
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.retention.ms=-1
"""


def _java(classpath: str, log4j: Path, main: str, *args: str) -> list[str]:
    return [
        "java",
        *JVM_OPTS,
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp",
        classpath,
        main,
        *args,
    ]


def _accepts(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=1.0):
        return True
    return False


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group (a clean shutdown), SIGKILL it after the grace, always reap."""
    for sig, wait_s in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, None)):
        if proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


@contextlib.contextmanager
def kafka_broker(workdir: Path, port: int | None = None) -> Iterator[Broker]:
    """Format storage, start ``kafka.Kafka``, wait until it accepts connections, stop on exit.
    Started again on the same ``workdir``, it is the same broker: its data and its ports
    (a test stops a broker and brings it back).

    Raises :class:`jvm_deps.MissingJarsError` when the jars were not fetched, and RuntimeError
    (with the log's tail) when the broker exits or is not up within START_TIMEOUT_S.
    """
    classpath = jvm_deps.classpath(JAR_GROUP)
    workdir.mkdir(parents=True, exist_ok=True)
    ports = workdir / "ports.json"
    known = json.loads(ports.read_text()) if ports.exists() else {}
    port = _free_port(port or known.get("port", 0))
    controller_port = _free_port(known.get("controller", 0))
    ports.write_text(json.dumps({"port": port, "controller": controller_port}))
    props = workdir / "server.properties"
    props.write_text(server_properties(workdir, port, controller_port))
    log4j = workdir / "log4j2.properties"
    log4j.write_text(LOG4J2)
    log_path = workdir / "kafka.log"

    formatted = (workdir / "data" / "meta.properties").exists()  # started here before
    with log_path.open("ab") as log:
        fmt = (
            None
            if formatted
            else subprocess.run(
                [
                    *_java(classpath, log4j, "kafka.tools.StorageTool", "format"),
                    *("--config", str(props), "--cluster-id", _cluster_id(), "--ignore-formatted"),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=START_TIMEOUT_S,
            )
        )
    if fmt is not None and fmt.returncode != 0:
        raise RuntimeError(f"kafka storage format failed ({fmt.returncode}):\n{_tail(log_path)}")

    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            _java(classpath, log4j, "kafka.Kafka", str(props)),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: _stop signals the JVM and nothing else
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _accepts(port):
            if proc.poll() is not None:
                raise RuntimeError(f"kafka exited with {proc.returncode}:\n{_tail(log_path)}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"kafka not accepting on {HOST}:{port} after {START_TIMEOUT_S:.0f}s:\n"
                    f"{_tail(log_path)}"
                )
            time.sleep(0.2)
        yield Broker(bootstrap=f"{HOST}:{port}", log_path=log_path, pid=proc.pid)
    finally:
        _stop(proc)
