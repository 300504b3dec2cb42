"""A new streaming query's start on a Python data source, with Spark's Python zips as shipped
and with bytecode in them (``tidegate_runtime/packaging/pyspark_zip.py``, issue 25).

Every query on a Python data source starts one new Python process on the driver (Spark's
``PythonStreamingSourceRunner``), which imports pyspark from ``SPARK_HOME/python/lib/*.zip``;
in an update that start lies inside the pause (go → the new query's first batch). Two
``SPARK_HOME`` folders that differ only in their zips (links to the installed Spark for the
rest): "shipped", the zips without bytecode, as Spark's distributions and pip build them, and
"precompiled". Each round runs both, order turning, each in a fresh local Spark that starts
``--queries`` queries on tidegate's event-log source one after the other (the first left out:
it also starts the session's other Python processes) and times ``start()`` → the first
batch's start (its progress timestamp).

    python bench/query_start.py                 # 6 rounds x 8 queries (~3 min)
    python bench/query_start.py --rounds 2 --queries 3
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, median, save, table
from tidegate_runtime.packaging import pyspark_zip

VARIANTS = ("shipped", "precompiled")


def spark_home_variant(base: Path, home: Path, variant: str) -> Path:
    """A SPARK_HOME of links to ``home`` whose python/lib zips are this variant's copies."""
    target = base / variant
    (target / "python" / "lib").mkdir(parents=True)
    for entry in home.iterdir():
        if entry.name != "python":
            (target / entry.name).symlink_to(entry)
    for entry in (home / "python").iterdir():
        if entry.name != "lib":
            (target / "python" / entry.name).symlink_to(entry)
    for archive in pyspark_zip.spark_python_zips(home):
        copy = target / "python" / "lib" / archive.name
        with zipfile.ZipFile(archive) as src, zipfile.ZipFile(copy, "w") as dst:
            for info in src.infolist():
                if not info.filename.endswith(".pyc"):  # as shipped: sources only
                    dst.writestr(info, src.read(info))
        if variant == "precompiled":
            pyspark_zip.precompile(copy)
    return target


def child(queries: int) -> None:
    """In a fresh process: a local Spark, ``queries`` starts; print the seconds each took."""
    from pyspark.sql import SparkSession

    from tidegate_runtime.sources.eventlog import NewRecord
    from tidegate_runtime.sources.eventlog_producer import append_pairs
    from tidegate_runtime.sources.eventlog_source import read_events

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    root, now = tempfile.mkdtemp(), int(time.time() * 1000)
    append_pairs(root, "s", [(i % 2, NewRecord(now, f"a{i}", "1")) for i in range(100)])
    seconds = []
    for _ in range(queries):
        started = time.time()
        query = (
            read_events(spark, root, "s")
            .writeStream.format("noop")
            .option("checkpointLocation", tempfile.mkdtemp())
            .trigger(processingTime="100 milliseconds")
            .start()
        )
        while not query.recentProgress:
            time.sleep(0.01)
        stamp = query.recentProgress[0]["timestamp"].replace("Z", "+00:00")
        seconds.append(datetime.datetime.fromisoformat(stamp).timestamp() - started)
        query.stop()
    spark.stop()
    print(json.dumps(seconds[1:]))


def run_round(home: Path, queries: int) -> list[float]:
    env = {**os.environ, "SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", str(queries)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--queries", type=int, default=8)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    home = pyspark_zip.spark_home()
    figures: dict[str, list[float]] = {v: [] for v in VARIANTS}
    loads: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        homes = {v: spark_home_variant(Path(scratch), home, v) for v in VARIANTS}
        for r in range(args.rounds):
            for variant in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
                loads.append(os.getloadavg()[0])
                figures[variant] += run_round(homes[variant], args.queries)
                print(f"round {r + 1} {variant}: median {median(figures[variant]):.3f} s")
    base = median(figures["shipped"])
    rows = [
        [
            v,
            f"{median(xs):.3f} s",
            f"{min(xs):.3f}-{max(xs):.3f} s",
            str(len(xs)),
            f"{median(xs) / base:.2f}x",
        ]
        for v, xs in figures.items()
    ]
    print(f"\nload {min(loads):.1f}-{max(loads):.1f}")
    print(table(rows, ["zips", "start() → first batch", "min-max", "queries", "vs shipped"]))
    save(
        "query-start",
        {"seconds": figures, "load": loads, "rounds": args.rounds, "queries": args.queries},
    )


if __name__ == "__main__":
    main()
