"""The two large-state pipelines the state-size benchmark (bench/statesize.py) can run:

  dedup   pipelines/dedup_events.py: each event id once over an hour of event time. Every
          batch reads the whole state (the eviction by watermark scans every id), so its batch
          grows with the state.
  totals  pipelines/key_totals.py: a running count and sum per account, kept forever (output
          mode update, no watermark). A batch reads and writes only the accounts of its own
          events: its time follows the input, not the state. The shape of Flink's large-state
          anchor (a COUNT and LAST_VALUE per key).

For each: how many keys make about N MB of RocksDB state on disk (from seeds measured
before), the seed's events, the events fed during the rounds, the query the seed child
builds, and the version tidegate runs."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.streaming.readwriter import DataStreamWriter

from bench.common import ROOT
from pipelines import dedup_events, key_totals
from pipelines.register_examples import dedup_events_version, key_totals_version

T0 = 1_767_225_600_000


@dataclass(frozen=True)
class Pipeline:
    name: str
    file: Path
    query: str
    # (MB of RocksDB state on disk, keys): a seed is sized between the two nearest points on a
    # log-log line (state per key grows with the store: more levels, older versions kept).
    measured: tuple[tuple[float, int], ...]
    # (log root, stream, keys): the seed's events, then the few more its tail batches read.
    seed_events: Callable[[str, str, int], None]
    tail_events: Callable[[str, str, int], None]
    # (log root, stream, keys, first event number): 100 events fed during the rounds.
    fed_events: Callable[[str, str, int, int, int], None]
    # events -> the writer of the query, its output mode
    writer: Callable[[DataFrame, str], DataStreamWriter]
    output_mode: str
    version: Callable[[Path, str, Path, str], dict[str, Any]]

    def keys_for(self, mb: int) -> int:
        """Keys whose state is about ``mb`` MB on disk."""
        points = self.measured
        below = max((p for p in points if p[0] <= mb), default=points[0])
        above = min((p for p in points if p[0] > mb), default=points[-1])
        if above == below:
            below, above = (points[-2], points[-1]) if mb >= points[-1][0] else points[:2]
        slope = math.log(above[1] / below[1]) / math.log(above[0] / below[0])
        return int(below[1] * (mb / below[0]) ** slope)


def _dedup_seed(root: str, stream: str, keys: int) -> None:
    # One event time for every seed event: the hour-long watermark drops none.
    dedup_events.produce_events(root, stream, keys, start_ts_ms=T0, ts_step_ms=0)


def _dedup_tail(root: str, stream: str, keys: int) -> None:
    dedup_events.produce_events(root, stream, 2000, T0 + 1, ts_step_ms=0, first_id=10**10)


def _dedup_fed(root: str, stream: str, keys: int, at: int, first: int) -> None:
    dedup_events.produce_events(root, stream, 100, at, ts_step_ms=5, first_id=first)


def _dedup_writer(events: DataFrame, out: str) -> DataStreamWriter:
    frame = dedup_events.build_deduplicated(events)
    return frame.writeStream.format("parquet").option("path", out)


def _totals_seed(root: str, stream: str, keys: int) -> None:
    # Every account once (the spread is a permutation of 0..keys-1), then updates to them.
    key_totals.produce_account_events(root, stream, keys, keys, T0, ts_step_ms=0)


def _totals_tail(root: str, stream: str, keys: int) -> None:
    key_totals.produce_account_events(root, stream, 2000, keys, T0 + 1, 0, first=keys)


def _totals_fed(root: str, stream: str, keys: int, at: int, first: int) -> None:
    key_totals.produce_account_events(root, stream, 100, keys, at, 5, first=first)


def _totals_writer(events: DataFrame, out: str) -> DataStreamWriter:
    frame = key_totals.build_totals(events)
    return frame.writeStream.foreachBatch(key_totals.BatchDirectories(out))


DEDUP = Pipeline(
    name="dedup",
    file=ROOT / "pipelines" / "dedup_events.py",
    query=dedup_events.QUERY,
    measured=(
        (9, 537_732),
        (98, 5_795_742),
        (598, 35_429_146),
        (785, 46_493_298),
        (999, 59_210_292),
    ),
    seed_events=_dedup_seed,
    tail_events=_dedup_tail,
    fed_events=_dedup_fed,
    writer=_dedup_writer,
    output_mode="append",
    version=dedup_events_version,
)

TOTALS = Pipeline(
    name="totals",
    file=ROOT / "pipelines" / "key_totals.py",
    query=key_totals.QUERY,
    measured=((9.8, 300_000), (2450, 29_999_999)),  # every version kept: 82 bytes a key
    seed_events=_totals_seed,
    tail_events=_totals_tail,
    fed_events=_totals_fed,
    writer=_totals_writer,
    output_mode="update",
    version=key_totals_version,
)

PIPELINES = {p.name: p for p in (DEDUP, TOTALS)}
