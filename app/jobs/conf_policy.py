"""The Spark conf an operate token may set: listed keys only, each value checked by its type.

A key not listed here is an admin's: anything that loads code or a class, names a program, an
image or a file, changes the JVM, the environment or what is redacted, and every key Spark adds
tomorrow (issue 51 M1: the old ``spark.sql.*`` prefix let through
``spark.sql.execution.pyspark.python``, which chose the executors' Python program). A value is
an int, a size, a duration, a fraction, a bool or one of a closed set: never a class name, and
never ``${`` (issue 51 H1: Spark expands ``${env:X}``, ``${system:X}`` and ``${spark.key}`` in
values, and its type error would print the secret into the run's error).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from zoneinfo import available_timezones

_INT = re.compile(r"-?[0-9]{1,10}")
_SIZE = re.compile(r"[0-9]{1,12}(?:[kmgtp]i?b?|b)?", re.IGNORECASE)
_DURATION = re.compile(r"[0-9]{1,12}(?:us|ms|s|m|min|h|d)?", re.IGNORECASE)
_FRACTION = re.compile(r"[0-9]{1,6}(?:\.[0-9]{1,6})?")
_OFFSET = re.compile(r"(?:UTC|GMT)?[+-](?:[01][0-9]|2[0-3]):?[0-5][0-9]")


def _matches(pattern: re.Pattern[str], what: str) -> Callable[[str], str | None]:
    return lambda v: None if pattern.fullmatch(v) else what


def _one_of(*choices: str) -> Callable[[str], str | None]:
    allowed = {c.lower(): c for c in choices}
    return lambda v: None if v.lower() in allowed else "one of " + ", ".join(choices)


def _time_zone(value: str) -> str | None:
    ok = value in ("UTC", "GMT") or value in _zones() or bool(_OFFSET.fullmatch(value))
    return None if ok else "a time zone id such as UTC or Europe/Paris, or an offset like +02:00"


@cache
def _zones() -> frozenset[str]:
    return frozenset(available_timezones())


def as_text(value: object) -> str:
    """A conf value as Spark reads it: a JSON bool as ``true``/``false``, anything else as
    its string."""
    return str(value).lower() if isinstance(value, bool) else str(value)


INT = _matches(_INT, "an integer")
SIZE = _matches(_SIZE, "a size such as 512m or 2g")
DURATION = _matches(_DURATION, "a duration such as 120s, 500ms or 5min")
FRACTION = _matches(_FRACTION, "a number such as 0.6")
BOOL = _one_of("true", "false")
CODEC = _one_of("lz4", "lzf", "snappy", "zstd")

STATE_STORE_PROVIDERS = (
    "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
)
_ROCKSDB = "spark.sql.streaming.stateStore.rocksdb."

# key -> check of its value (None: fine; else what the value must be).
ALLOWED: dict[str, Callable[[str], str | None]] = {
    # resources and parallelism
    "spark.driver.memory": SIZE,
    "spark.executor.memory": SIZE,
    "spark.driver.memoryOverhead": SIZE,
    "spark.executor.memoryOverhead": SIZE,
    "spark.driver.memoryOverheadFactor": FRACTION,
    "spark.executor.memoryOverheadFactor": FRACTION,
    "spark.driver.cores": INT,
    "spark.executor.cores": INT,
    "spark.driver.maxResultSize": SIZE,
    "spark.executor.instances": INT,
    "spark.executor.heartbeatInterval": DURATION,
    "spark.cores.max": INT,
    "spark.default.parallelism": INT,
    "spark.task.cpus": INT,
    "spark.task.maxFailures": INT,
    "spark.scheduler.mode": _one_of("FIFO", "FAIR"),
    "spark.network.timeout": DURATION,
    "spark.dynamicAllocation.enabled": BOOL,
    "spark.dynamicAllocation.shuffleTracking.enabled": BOOL,
    "spark.dynamicAllocation.minExecutors": INT,
    "spark.dynamicAllocation.maxExecutors": INT,
    "spark.dynamicAllocation.initialExecutors": INT,
    "spark.dynamicAllocation.executorIdleTimeout": DURATION,
    "spark.dynamicAllocation.cachedExecutorIdleTimeout": DURATION,
    "spark.dynamicAllocation.schedulerBacklogTimeout": DURATION,
    "spark.memory.fraction": FRACTION,
    "spark.memory.storageFraction": FRACTION,
    "spark.memory.offHeap.enabled": BOOL,
    "spark.memory.offHeap.size": SIZE,
    "spark.speculation": BOOL,
    "spark.speculation.interval": DURATION,
    "spark.speculation.multiplier": FRACTION,
    "spark.speculation.quantile": FRACTION,
    "spark.locality.wait": DURATION,
    "spark.locality.wait.process": DURATION,
    "spark.locality.wait.node": DURATION,
    "spark.locality.wait.rack": DURATION,
    "spark.python.worker.memory": SIZE,
    "spark.python.worker.reuse": BOOL,
    "spark.rdd.compress": BOOL,
    "spark.shuffle.compress": BOOL,
    "spark.broadcast.compress": BOOL,
    "spark.shuffle.spill.compress": BOOL,
    "spark.shuffle.file.buffer": SIZE,
    "spark.ui.enabled": BOOL,
    "spark.ui.showConsoleProgress": BOOL,
    "spark.ui.retainedJobs": INT,
    "spark.ui.retainedStages": INT,
    # SQL
    "spark.sql.shuffle.partitions": INT,
    "spark.sql.session.timeZone": _time_zone,
    "spark.sql.ansi.enabled": BOOL,
    "spark.sql.caseSensitive": BOOL,
    "spark.sql.adaptive.enabled": BOOL,
    "spark.sql.adaptive.coalescePartitions.enabled": BOOL,
    "spark.sql.adaptive.coalescePartitions.initialPartitionNum": INT,
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": SIZE,
    "spark.sql.adaptive.skewJoin.enabled": BOOL,
    "spark.sql.autoBroadcastJoinThreshold": lambda v: None if v == "-1" else SIZE(v),
    "spark.sql.broadcastTimeout": DURATION,
    "spark.sql.files.maxPartitionBytes": SIZE,
    "spark.sql.files.maxRecordsPerFile": INT,
    "spark.sql.parquet.compression.codec": _one_of(
        "none", "uncompressed", "snappy", "gzip", "lzo", "brotli", "lz4", "lz4_raw", "zstd"
    ),
    "spark.sql.execution.arrow.pyspark.enabled": BOOL,
    "spark.sql.execution.arrow.maxRecordsPerBatch": INT,
    # Structured Streaming and the state store
    "spark.sql.streaming.metricsEnabled": BOOL,
    "spark.sql.streaming.noDataMicroBatches.enabled": BOOL,
    "spark.sql.streaming.minBatchesToRetain": INT,
    "spark.sql.streaming.numRecentProgressUpdates": INT,
    "spark.sql.streaming.pollingDelay": DURATION,
    "spark.sql.streaming.multipleWatermarkPolicy": _one_of("min", "max"),
    "spark.sql.streaming.statefulOperator.checkCorrectness.enabled": BOOL,
    "spark.sql.streaming.stateStore.providerClass": _one_of(*STATE_STORE_PROVIDERS),
    "spark.sql.streaming.stateStore.compression.codec": CODEC,
    "spark.sql.streaming.stateStore.minDeltasForSnapshot": INT,
    "spark.sql.streaming.stateStore.maintenanceInterval": DURATION,
    "spark.sql.streaming.stateStore.stateSchemaCheck": BOOL,
    "spark.sql.streaming.maxBatchesToRetainInMemory": INT,
    _ROCKSDB + "changelogCheckpointing.enabled": BOOL,
    _ROCKSDB + "compactOnCommit": BOOL,
    _ROCKSDB + "blockSizeKB": INT,
    _ROCKSDB + "blockCacheSizeMB": INT,
    _ROCKSDB + "lockAcquireTimeoutMs": INT,
    _ROCKSDB + "maxOpenFiles": INT,
    _ROCKSDB + "resetStatsOnLoad": BOOL,
    _ROCKSDB + "trackTotalNumberOfRows": BOOL,
    _ROCKSDB + "formatVersion": INT,
    _ROCKSDB + "boundedMemoryUsage": BOOL,
    _ROCKSDB + "maxMemoryUsageMB": INT,
    _ROCKSDB + "writeBufferSizeMB": INT,
    _ROCKSDB + "maxWriteBufferNumber": INT,
    _ROCKSDB + "writeBufferCacheRatio": FRACTION,
    _ROCKSDB + "highPriorityPoolRatio": FRACTION,
    _ROCKSDB + "allowFAllocate": BOOL,
    _ROCKSDB + "compression": _one_of("lz4", "snappy", "zstd", "zlib", "none"),
}


def problem(key: str, value: str) -> str | None:
    """Why an operate token may not set ``key`` to ``value`` (None: it may)."""
    check = ALLOWED.get(key)
    if check is None:
        return (
            "not a key an operate token may set (resources, parallelism, and listed SQL, "
            "streaming and state store settings are; keys that load code, classes, files or "
            "images, or change the JVM or the environment, are an admin's)"
        )
    if "${" in value:
        return "a value may not hold '${' (Spark would substitute a variable into it)"
    wanted = check(value.strip())
    return None if wanted is None else f"its value must be {wanted}"
