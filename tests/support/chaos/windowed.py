"""The windowed example pipeline (pipelines/windowed_counts.py) as the fault tests run it: a
version of it on the local runner, input that keeps arriving, and its committed windows in the
form the ground truth (pipelines/ground_truth.py) computes them in plain Python."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pyarrow.parquet as pq

from pipelines.ground_truth import WINDOW_MS, expected_windowed_counts
from tests.support.chaos.harness import committed_files
from tests.support.e2e import SPARK_TEST_CONF
from tests.support.stack import ROOT
from tidegate_runtime.sources.eventlog import NewRecord, Stream

Window = tuple[int, str, int, float | None]  # (window start in ms, key, count, sum)


def windowed_version(
    client: httpx.Client,
    job: str,
    root: Path,
    out: Path,
    window: str | None = None,
    trigger: str = "1 SECONDS",
) -> int:
    """A version of ``job`` counting ``root``'s stream ``clicks`` into ``out`` (Parquet) in
    ``window``-long windows (default: the pipeline's 1 minute); its number."""
    body = {
        "app": {
            "file": str(ROOT / "pipelines" / "windowed_counts.py"),
            "args": ["--root", str(root), "--stream", "clicks", "--output", str(out)]
            + (["--window", window] if window else []),
        },
        "cluster": "runner",
        "conf": {**SPARK_TEST_CONF, "spark.sql.session.timeZone": "UTC"},
        "queries": [
            {
                "name": "windowed_counts",
                "sources": [
                    {
                        "name": "clicks",
                        "kind": "eventlog",
                        "options": {"root": str(root), "stream": "clicks"},
                    }
                ],
                "stateful_operators": [{"kind": "tumbling_window"}],
                "output_mode": "append",
                "trigger": trigger,
            }
        ],
    }
    r = client.post(f"/jobs/{job}/versions", json=body)
    assert r.status_code == 201, r.text
    number: int = r.json()["number"]
    return number


def committed_windows(out: Path) -> list[Window]:
    """Every window the Parquet sink committed to ``out`` (its ``_spark_metadata`` log: part
    files of a batch that died before its commit are not read), duplicates kept."""
    rows = []
    for path in committed_files(out):
        for r in pq.read_table(path).to_pylist():
            rows.append((int(r["window_start"].timestamp() * 1000), r["key"], r["count"], r["sum"]))
    return sorted(rows, key=repr)


def expected_windows(
    root: Path,
    ranges: dict[int, tuple[int, int]] | None = None,
    *,
    window_ms: int = WINDOW_MS,
    closed_only: bool = True,
) -> list[Window]:
    """The windows the pipeline must commit for ``ranges`` of the log (default: all of it)."""
    return sorted(
        (
            (w.window_start_ms, w.key, w.count, w.sum)
            for w in expected_windowed_counts(
                root, "clicks", ranges, window_ms=window_ms, closed_only=closed_only
            )
        ),
        key=repr,
    )


@contextmanager
def producing(stream: Stream, first_ts: int, every: float = 0.1) -> Iterator[None]:
    """Events keep arriving in both partitions (bounded: at most 3000 each) for the block."""
    stop = threading.Event()

    def produce_until_stopped() -> None:
        ts, n = first_ts, 0
        while not stop.wait(every) and n < 3000:
            for p in range(2):
                stream.append(p, [NewRecord(ts, f"k{n % 5}", str(n % 97))])
            ts, n = ts + 400, n + 1

    thread = threading.Thread(target=produce_until_stopped, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
