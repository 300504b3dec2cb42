"""Downtime of changing a running stream job on a Kafka source, beside bare Spark and Flink
reading the same topic (issue 52). bench/upgrade.py's measurement (its strategies, rounds and
figures, imported from it) on pipelines/kafka_windowed_counts.py instead of the event log: a
real Apache Kafka broker on loopback (app/devtools/kafka_broker.py, KRaft, one node) holds a
topic that keeps receiving records, every job of every strategy reads it.

  bare      the baseline: kill the driver through Spark's REST submission API, resubmit the
            same app on the same checkpoint (no tidegate);
  update-snapshot-prewarmed  tidegate: POST /jobs/{job}/update strategy snapshot, the new
            driver started beforehand as a standby (it waits for go while the old one runs);
  update-drain-prewarmed     the same by drain (every window flushed, the new version starts
            fresh at the drained offsets, which tidegate hands it as Kafka startpoints);
  flink-kafka  Flink 2.3's stop-with-savepoint + restore of a PyFlink SQL job reading the same
            topic with Flink's Kafka connector (bench/flink/sql_kafka_window_job.py, the
            anchor's sql_window_job.py on Kafka; jvm/deps.toml group flink-kafka), through
            ../shared/anchors/flink/run.sh (``run.sh setup`` once). Its cluster runs during its
            own rounds only, never beside a Spark measurement.

and upgrade.py's others on the same topic (restart, restart-prewarmed, crash, crash-hotspare,
update-snapshot, update-drain, and flink, the anchor on its own datagen source).

Two figures per switch, as in upgrade.py: request→commit (the request to the new driver's first
committed batch) and stood still (the old driver's last committed batch to the new driver's
first: how long the output stood still); the signal is the first ``commits/N`` of the
checkpoint written after the new driver was submitted or told to go. For Flink both are its one
figure: the stop call to the first output line of the restored job (1 s windows, so it writes
about every second). Input keeps arriving throughout (40 records a second by default, Kafka
timestamps moving with the clock), so every new driver has work.

``--checkpoints s3``: every Spark checkpoint in a bucket instead of on this disk (the default,
``local``), on moto's S3 server, which the script starts on loopback in its own process
(app/devtools/s3_server.py): tidegate's checkpoint root ``s3a://<bucket>/checkpoints`` and its
snapshots in the same bucket (``s3://<bucket>/snapshots``: an export copies state
server-side), bare Spark's checkpoints beside them, every driver writing through Hadoop's S3A
(the hadoop-aws jars, ``s3a_conf``), as docs/deploy.md "Checkpoints in object storage" says.
The commit signal is then read from the bucket: the ``commits/N`` keys listed through s3fs,
each one's write time as the server recorded it (S3's LastModified is in whole seconds).
Flink's savepoints stay on this disk. Results: bench/results/kafka-upgrade-s3.json.

    python bench/kafka_upgrade.py [--reps 3] [--strategies bare,update-snapshot-prewarmed,...]
    python bench/kafka_upgrade.py --reps 1 --strategies bare   # smoke (no Flink)
    python bench/kafka_upgrade.py --checkpoints s3 --strategies bare,update-snapshot-prewarmed
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from app.devtools import jvm_deps
from app.devtools.kafka_broker import kafka_broker
from app.devtools.s3_server import (
    create_bucket,
    moto_server,
    s3a_conf,
    s3fs_options,
    written_at,
)
from bench.common import ROOT
from bench.upgrade import (
    FLINK,
    STRATEGIES,
    Checkpoints,
    Context,
    Source,
    Strategy,
    Switch,
    Written,
    _no_cleanup,
    _report,
    flink_anchor,
    measure,
)
from tidegate_runtime.sources.eventlog_producer import DEFAULT_KEYS, partition_for_key

PIPELINE = ROOT / "pipelines" / "kafka_windowed_counts.py"
FLINK_JOB = ROOT / "bench" / "flink" / "sql_kafka_window_job.py"
FLINK_KAFKA = "flink-kafka"  # the jar group (jvm/deps.toml) and the strategy
TOPIC = "clicks"
DEFAULT = "bare,update-snapshot-prewarmed,update-drain-prewarmed,flink-kafka"
CHECKPOINTS = ("local", "s3")


def kafka_source(
    bootstrap: str,
    topic: str,
    conf: dict[str, str] | None = None,
    jar_groups: tuple[str, ...] = ("spark-kafka",),
) -> Source:
    """pipelines/kafka_windowed_counts.py on ``topic``, declared to tidegate as
    tests/startpoints/test_kafka_e2e.py does (source kind kafka, the Spark Kafka jars); with
    ``conf`` and the jars of more ``jar_groups`` (jvm/deps.toml), e.g. to checkpoint in S3."""
    jars = ",".join(jvm_deps.classpath(group, sep=",") for group in jar_groups)
    return Source(
        PIPELINE,
        ["--bootstrap", bootstrap, "--topic", topic],
        [],  # its trigger is its own (1 second)
        {
            "name": "clicks",
            "kind": "kafka",
            "options": {"kafka.bootstrap.servers": bootstrap, "subscribe": topic},
        },
        {"spark.jars": jars, **(conf or {})},
    )


def bucket_commits(fs: Any) -> Written:
    """The commit signal of a checkpoint in a bucket on the server of ``moto_server`` (this
    process): its ``commits/N`` keys listed through s3fs (``fs``), each one's write time as
    the server recorded it (``written_at``: to the microsecond, where S3's LastModified has
    whole seconds)."""

    def written(checkpoint: str) -> list[float]:
        where = checkpoint.split("://", 1)[1]  # bucket/prefix…
        try:
            keys = fs.ls(f"{where}/commits", detail=False, refresh=True)
        except FileNotFoundError:
            return []
        bucket = where.split("/", 1)[0]
        times = (
            written_at(bucket, key.split("/", 1)[1])
            for key in keys
            if key.rsplit("/", 1)[-1].isdigit()
        )
        return [t for t in times if t is not None]

    return written


@contextmanager
def s3_checkpoints() -> Iterator[tuple[Checkpoints, str]]:
    """moto's S3 server on loopback (stopped on the way out) and a bucket on it: every
    checkpoint there (tidegate's root, bare Spark's beside it), tidegate's snapshots in the
    same bucket; the checkpoints and the server's endpoint."""
    import fsspec

    with moto_server() as endpoint:
        bucket = create_bucket(endpoint)
        options = json.dumps(s3fs_options(endpoint))
        fs = fsspec.filesystem("s3", **s3fs_options(endpoint), skip_instance_cache=True)
        env = {
            "TIDEGATE_CHECKPOINT_STORAGE_OPTIONS": options,
            "TIDEGATE_SNAPSHOT_ROOT": f"s3://{bucket}/snapshots",
            "TIDEGATE_SNAPSHOT_STORAGE_OPTIONS": options,
        }
        yield Checkpoints(f"s3a://{bucket}", bucket_commits(fs), env), endpoint


def flink_kafka(bootstrap: str, topic: str) -> Callable[[Context, int], Switch]:
    """The Flink anchor's stop-with-savepoint + restore, its job reading ``topic``."""
    env = {
        # run.sh takes its job relative to its own folder
        "FLINK_JOB": os.path.relpath(FLINK_JOB, FLINK.parent),
        "KAFKA_BOOTSTRAP": bootstrap,
        "KAFKA_TOPIC": topic,
        "FLINK_KAFKA_JAR": jvm_deps.classpath(FLINK_KAFKA),
    }

    def run(ctx: Context, rep: int) -> Switch:
        return flink_anchor(env)

    return run


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


def feed(bootstrap: str, topic: str, partitions: int, rate: int, stop: threading.Event) -> None:
    """Records that keep arriving, ``rate`` a second in two sends: as
    tidegate_runtime.sources.eventlog_producer writes the event log (key ``k0``..``k9``, its
    partition by the key, value ``i % 100``), each record's Kafka timestamp the clock's."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    i = 0
    try:
        while not stop.is_set():
            now = int(time.time() * 1000)
            step = 1000 // rate
            for n in range(rate // 2):
                key = DEFAULT_KEYS[i % len(DEFAULT_KEYS)]
                producer.send(
                    topic,
                    key=key.encode(),
                    value=str(i % 100).encode(),
                    partition=partition_for_key(key, partitions),
                    timestamp_ms=now + n * step,
                )
                i += 1
            producer.flush()
            stop.wait(0.5)
    finally:
        producer.close()


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--strategies", default=DEFAULT)
    parser.add_argument("--partitions", type=int, default=2, help="the topic's partitions")
    parser.add_argument("--rate", type=int, default=40, help="records a second (2 to 1000)")
    parser.add_argument(
        "--checkpoints",
        choices=CHECKPOINTS,
        default="local",
        help="where every Spark checkpoint (and tidegate's snapshots) go: this disk, or a "
        "bucket on moto's S3 server on loopback",
    )
    parser.add_argument(
        "--results",
        help="bench/results/<name>.json (default: kafka-upgrade, kafka-upgrade-s3 with "
        "--checkpoints s3)",
    )
    args = parser.parse_args()
    in_s3 = args.checkpoints == "s3"
    results = args.results or ("kafka-upgrade-s3" if in_s3 else "kafka-upgrade")
    known = [s for s in STRATEGIES if s != "flink"] + [FLINK_KAFKA, "flink"]
    chosen = [s.strip() for s in args.strategies.split(",") if s.strip()]
    unknown = set(chosen) - set(known)
    if unknown:
        parser.error(f"unknown strategies {sorted(unknown)}; known: {known}")
    if not 2 <= args.rate <= 1000 or args.reps < 1 or args.partitions < 1:
        parser.error("--rate 2..1000, --reps and --partitions at least 1")
    try:
        jvm_deps.jars("spark-kafka")
        jvm_deps.jars("kafka-broker")
        if in_s3:
            jvm_deps.jars("hadoop-aws")
        if FLINK_KAFKA in chosen:
            jvm_deps.jars(FLINK_KAFKA)
    except jvm_deps.MissingJarsError as exc:
        parser.error(str(exc))
    flink_venv = Path(os.environ.get("FLINK_EXP", "/tmp/flinkexp")) / "venv" / "bin" / "python"
    for anchor in (FLINK_KAFKA, "flink"):
        if anchor in chosen and not flink_venv.exists():
            print(f"no Flink anchor (run `bash {FLINK} setup` once): measuring without {anchor}")
            chosen.remove(anchor)
    if not chosen:
        parser.error("nothing left to measure")

    load_start = _load()
    print(f"load average at start (1, 5, 15 min): {load_start}")
    tmp = Path(tempfile.mkdtemp(prefix="tidegate-bench-kafka-upgrade-"))
    stop_feed = threading.Event()
    with ExitStack() as started:  # the broker (and S3) stopped on the way out, failure or not
        broker = started.enter_context(kafka_broker(tmp / "kafka"))
        checkpoints, source = None, kafka_source(broker.bootstrap, TOPIC)
        if in_s3:
            checkpoints, endpoint = started.enter_context(s3_checkpoints())
            groups = ("spark-kafka", "hadoop-aws")
            source = kafka_source(broker.bootstrap, TOPIC, s3a_conf(endpoint), groups)
            print(f"checkpoints in S3: {checkpoints.at('checkpoints')} (moto, {endpoint})")
        create_topic(broker.bootstrap, TOPIC, args.partitions)
        feeder = threading.Thread(
            target=feed,
            args=(broker.bootstrap, TOPIC, args.partitions, args.rate, stop_feed),
            daemon=True,
        )
        feeder.start()
        strategies: dict[str, Strategy] = {
            **STRATEGIES,
            FLINK_KAFKA: (flink_kafka(broker.bootstrap, TOPIC), _no_cleanup),
        }
        print(f"kafka {broker.bootstrap}, topic {TOPIC} ({args.partitions} partitions)")
        try:
            switches, failures = measure(
                tmp,
                tmp / "log",  # no event log here: every job reads the topic
                chosen,
                args.reps,
                strategies,
                source,
                checkpoints,
            )
        finally:
            stop_feed.set()
            feeder.join(30)
    load_end = _load()
    print(f"\nsource: Kafka topic ({args.partitions} partitions, {args.rate} records/s)")
    print(f"checkpoints: {args.checkpoints}")
    print(f"load average (1, 5, 15 min): at start {load_start}, at end {load_end}")
    _report(
        switches,
        args.reps,
        results=results,
        anchor=FLINK_KAFKA,
        extra={
            "source": "kafka",
            "checkpoints": args.checkpoints,
            "partitions": args.partitions,
            "records_per_s": args.rate,
            "strategies": chosen,
            "load_avg_start": load_start,
            "load_avg_end": load_end,
            "flink_kafka_connector": jvm_deps.load_groups()[FLINK_KAFKA][0].coord,
            "failures": {s: e for s, e in failures.items() if e},
        },
    )
    for strategy, errors in failures.items():
        if errors:
            print(f"{strategy}: {len(errors)} of {args.reps} switches FAILED: {errors}")


if __name__ == "__main__":
    main()
