"""Synthetic Spark checkpoints (written the way Spark writes them) and the snapshot stores
under test: a local folder, a file:// URL and S3 (moto's server). A fixture plugin of
``tests/conftest.py``."""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.snapshots.store.blobs import SnapshotStore
from tests.support.s3 import S3Store, create_bucket, fault_proxy, moto_server
from tidegate_runtime.checkpoints.checkpoint import hadoop_crc

META = {"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}}
KEY_SCHEMA = {
    "type": "struct",
    "fields": [
        {
            "name": "window",
            "type": {
                "type": "struct",
                "fields": [
                    {"name": "start", "type": "timestamp", "nullable": True, "metadata": {}},
                    {"name": "end", "type": "timestamp", "nullable": True, "metadata": {}},
                ],
            },
            "nullable": True,
            "metadata": {},
        },
        {"name": "key", "type": "string", "nullable": True, "metadata": {}},
    ],
}
VALUE_SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "count", "type": "long", "nullable": True, "metadata": {}},
        {"name": "sum", "type": "double", "nullable": True, "metadata": {}},
    ],
}


def _write(path: Path, data: bytes, crc: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if crc:
        path.with_name(f".{path.name}.crc").write_bytes(hadoop_crc(data))


def _utf(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">H", len(raw)) + raw


def schema_file(key: dict[str, Any], value: dict[str, Any]) -> bytes:
    """Spark's state schema file, format v2 (see tidegate_runtime.checkpoints.checkpoint)."""
    return (
        _utf("v2")
        + struct.pack(">i", 1)
        + _utf(json.dumps(key))
        + struct.pack(">i", 1)
        + _utf(json.dumps(value))
    )


class FakeCheckpoint:
    """Writes what Spark's HDFS state store provider writes, batch by batch."""

    def __init__(
        self,
        root: Path,
        *,
        partitions: int = 2,
        operator: str | None = "stateStoreSave",
        shuffle_partitions: int | None = None,
        sources: int = 1,
        delta_bytes: int = 2000,
    ) -> None:
        self.root = root
        self.partitions = partitions
        self.operator = operator
        self.sources = sources
        self.delta_bytes = delta_bytes
        self.shuffle = shuffle_partitions or partitions
        self.batches = -1
        _write(root / "metadata", json.dumps({"id": "q-1"}).encode())
        if operator is not None:
            info = {
                "operatorInfo": {"operatorId": 0, "operatorName": operator},
                "stateStoreInfo": [
                    {"storeName": "default", "numColsPrefixKey": 0, "numPartitions": partitions}
                ],
            }
            _write(
                root / "state" / "0" / "_metadata" / "metadata",
                ("v1\n" + json.dumps(info)).encode(),
            )
            _write(
                root / "state" / "0" / "0" / "_metadata" / "schema",
                schema_file(KEY_SCHEMA, VALUE_SCHEMA),
            )

    def offsets_line(self, batch: int) -> str:
        return json.dumps({"0": (batch + 1) * 10, "1": (batch + 1) * 5})

    def batch(self, *, commit: bool = True, snapshot: bool = False) -> int:
        """Plan (and commit) the next batch; state version = batch + 1."""
        self.batches += 1
        n = self.batches
        meta = {
            **META,
            "batchWatermarkMs": n * 1000,
            "conf": {"spark.sql.shuffle.partitions": str(self.shuffle)},
        }
        lines = ["v1", json.dumps(meta)] + [self.offsets_line(n)] * self.sources
        _write(self.root / "offsets" / str(n), "\n".join(lines).encode())
        if self.operator is not None:
            for p in range(self.partitions):
                directory = self.root / "state" / "0" / str(p)
                _write(directory / f"{n + 1}.delta", os.urandom(self.delta_bytes))
                if snapshot:
                    _write(directory / f"{n + 1}.snapshot", os.urandom(1000))
        if commit:
            self.commit(n)
        return n

    def commit(self, n: int) -> None:
        data = f'v1\n{{"nextBatchWatermarkMs":{n * 1000}}}'.encode()
        _write(self.root / "commits" / str(n), data)


# ---- snapshot stores: a local folder, a file:// URL, and S3 (moto's server) -------------------


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    with moto_server() as endpoint:
        yield endpoint


@pytest.fixture
def s3(moto_endpoint: str) -> Iterator[S3Store]:
    """A fresh bucket, reached through a proxy that counts requests and can inject faults."""
    bucket = create_bucket(moto_endpoint)
    with fault_proxy(moto_endpoint) as (proxy, url):
        yield S3Store(url=f"s3://{bucket}/snapshots", endpoint=url, proxy=proxy, bucket=bucket)


@pytest.fixture(params=["path", "file-url", "s3"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], SnapshotStore]:
    """Makes the store under test (each call a new client of the same store)."""
    if request.param == "s3":
        bucket: S3Store = request.getfixturevalue("s3")
        return lambda: SnapshotStore(bucket.url, bucket.options())
    url = str(tmp_path / "store")
    if request.param == "file-url":
        url = f"file://{url}"
    return lambda: SnapshotStore(url)
