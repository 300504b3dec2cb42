"""A real S3 API on loopback for the tests and the benchmarks: moto's server mode in this
process (``moto_server``), a bucket on it (``create_bucket``), and what tidegate and a Spark
driver need to reach it (``s3fs_options``, ``s3a_conf``; docs/deploy.md, "Checkpoints in
object storage"). tests/support/s3.py adds a fault proxy in front; bench/kafka_upgrade.py's
``--checkpoints s3`` keeps its checkpoints and snapshots in such a bucket.

moto is a development dependency: nothing in production imports this module."""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC
from typing import Any

# Made-up credentials: tests assert they never appear in an error.
ACCESS_KEY = "AKIATIDEGATETESTKEY01"
SECRET_KEY = "tidegate-test-secret-do-not-echo-0123456789"
REGION = "us-east-1"


@contextmanager
def moto_server() -> Iterator[str]:
    """moto's S3 in server mode on a free loopback port; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    # werkzeug writes a response's headers and body separately: with Nagle on, each request
    # waits out the client's delayed ACK (40 ms). Accepted sockets inherit the option.
    no_delay(server._server.socket)  # type: ignore[union-attr]
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def no_delay(sock: socket.socket) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def create_bucket(endpoint: str) -> str:
    """A new bucket (a fresh name) on ``endpoint``; its name."""
    import boto3

    name = f"tidegate-{uuid.uuid4().hex[:12]}"
    boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name=REGION,
    ).create_bucket(Bucket=name)
    return name


def written_at(bucket: str, key: str) -> float | None:
    """When the object ``key`` of ``bucket`` was last written (a PUT, or a copy onto it), as
    the server of ``moto_server`` in this process recorded it, in seconds since the epoch to
    the microsecond; None if there is no such object. S3's LastModified, which a client
    lists, is in whole seconds: too coarse to time a batch by."""
    from moto.s3.models import s3_backends

    for account in s3_backends.values():
        for backend in account.values():
            found = backend.buckets.get(bucket)
            if found is not None:
                latest = found.keys.get(key)
                if latest is None:
                    return None
                # moto's clock is naive UTC
                return float(latest.last_modified.replace(tzinfo=UTC).timestamp())
    return None


def s3a_conf(endpoint: str) -> dict[str, str]:
    """The Spark conf a driver checkpointing to ``s3a://`` on ``endpoint`` (moto's server)
    needs besides the pinned hadoop-aws jars (docs/deploy.md): its endpoint, path-style
    access over plain HTTP, the test credentials."""
    return {
        "spark.hadoop.fs.s3a.endpoint": endpoint,
        "spark.hadoop.fs.s3a.endpoint.region": REGION,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.access.key": ACCESS_KEY,
        "spark.hadoop.fs.s3a.secret.key": SECRET_KEY,
        "spark.hadoop.fs.s3a.aws.credentials.provider": (
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
        ),
        # RocksDB's SST uploads: moto's server misanswers the SDK's Expect: 100-continue.
        "spark.hadoop.fs.s3a.optimized.copy.from.local.enabled": "false",
    }


def s3fs_options(endpoint: str) -> dict[str, Any]:
    """The s3fs options tidegate gets for a bucket on ``endpoint``."""
    return {
        "endpoint_url": endpoint,
        "key": ACCESS_KEY,
        "secret": SECRET_KEY,
        "client_kwargs": {"region_name": REGION},
    }
