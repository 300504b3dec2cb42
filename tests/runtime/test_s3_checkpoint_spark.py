"""A Structured Streaming query checkpointing to ``s3a://`` on real Spark (its S3A file system, the
pinned hadoop-aws jars) against a real S3 server (moto's, over HTTP on loopback), and the runtime's
checkpoint code reading and editing that checkpoint through the driver's own Hadoop file system
(tidegate_runtime/checkpoints/hadoop_files.py): a drain's flush batch planned in S3 emits the
windows left open, a rewind of the source's offsets and its revert, and no ``.crc`` sidecar
anywhere (Spark's S3A keeps none). Spark runs in a process of its own: the S3A jars must be on
its JVM's classpath from the start, which the suite's shared session is not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import boto3
import pytest

from app.devtools import jvm_deps
from tests.support.s3 import ACCESS_KEY, REGION, SECRET_KEY, create_bucket, moto_server, s3a_conf

pytestmark = pytest.mark.spark

DRIVER = textwrap.dedent(
    """
    import json, os, sys, time
    from pyspark.sql import SparkSession, functions as F
    from tidegate_runtime.checkpoints import checkpoint as cp
    from tidegate_runtime.checkpoints import hadoop_files

    spec = json.loads(sys.argv[1])
    builder = SparkSession.builder.master("local[2]").appName("s3-checkpoint")
    for key, value in spec["conf"].items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    hadoop_files.register(spark)
    inbox, out, ck = spec["inbox"], spec["out"], spec["checkpoint"]

    def drop(name, rows):
        with open(f"{inbox}/.{name}", "w") as f:
            f.writelines(json.dumps({"ts": ts, "k": k}) + "\\n" for ts, k in rows)
        os.rename(f"{inbox}/.{name}", f"{inbox}/{name}.json")

    drop("a", [("2026-01-01T00:00:10Z", "x"), ("2026-01-01T00:01:30Z", "x")])
    drop("b", [("2026-01-01T00:02:30Z", "y")])
    counts = (
        spark.readStream.schema("ts timestamp, k string").json(inbox)
        .withWatermark("ts", "10 seconds")
        .groupBy(F.window("ts", "1 minute"), "k").count()
        .select(F.col("window.start").cast("string").alias("start"), "k", "count")
    )
    writer = (
        counts.writeStream.format("parquet").option("path", out)
        .option("checkpointLocation", ck).outputMode("append")
    )

    def emitted():
        return sorted([r.start, r.k, r["count"]] for r in spark.read.parquet(out).collect())

    result = {}
    writer.trigger(availableNow=True).start().awaitTermination()
    result["before_flush"] = emitted()
    last = cp.latest_commit_batch(ck)
    result["last"] = last
    result["lines"] = cp.read_offsets(ck, last)[1]
    result["operators"] = [op.operator_name for op in cp.state_operators(ck)]
    drop("late", [("2026-01-01T00:00:20Z", "z")])
    result["flush"] = cp.plan_flush_batch(ck)
    writer.trigger(once=True).start().awaitTermination()
    result["after_flush"] = emitted()
    result["committed"] = cp.latest_commit_batch(ck)
    result["flush_lines"] = cp.read_offsets(ck, result["committed"])[1]
    # A rewind of the file source's position through the checkpoint, then its revert.
    backup = cp.rewrite_source_offsets(
        ck, result["committed"], 0, '{"logOffset":0}', discard_uncommitted=True
    )
    result["backup"] = backup
    result["rewound"] = cp.read_offsets(ck, result["committed"])[1]
    cp.restore_batch(ck, result["committed"])
    result["restored"] = cp.read_offsets(ck, result["committed"])[1]
    print("RESULT " + json.dumps(result), flush=True)
    """
)


def test_a_checkpoint_in_s3_is_flushed_rewound_and_restored_through_the_drivers_hadoop(
    tmp_path: Path,
) -> None:
    with moto_server() as endpoint:
        bucket = create_bucket(endpoint)
        inbox = tmp_path / "in"
        inbox.mkdir()
        spec: dict[str, Any] = {
            "inbox": str(inbox),
            "out": str(tmp_path / "out"),
            "checkpoint": f"s3a://{bucket}/ck/counts",
            "conf": {
                "spark.jars": jvm_deps.classpath("hadoop-aws", sep=","),
                "spark.sql.shuffle.partitions": "2",
                "spark.sql.session.timeZone": "UTC",
                "spark.ui.enabled": "false",
                **s3a_conf(endpoint),
            },
        }
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "AWS_EC2_METADATA_DISABLED": "true"}
        done = subprocess.run(
            [sys.executable, "-c", DRIVER, json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            cwd=Path(__file__).parents[2],
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        assert done.returncode == 0 and lines, done.stderr[-3000:]
        result = json.loads(lines[0][len("RESULT ") :])
        keys = [
            o["Key"]
            for o in boto3.client(
                "s3",
                endpoint_url=endpoint,
                aws_access_key_id=ACCESS_KEY,
                aws_secret_access_key=SECRET_KEY,
                region_name=REGION,
            ).list_objects_v2(Bucket=bucket)["Contents"]
        ]

    x0, x1, y2 = (
        ["2026-01-01 00:00:00", "x", 1],
        ["2026-01-01 00:01:00", "x", 1],
        [
            "2026-01-01 00:02:00",
            "y",
            1,
        ],
    )
    assert result["operators"] == ["stateStoreSave"]
    assert result["before_flush"] == [x0, x1]  # the window at 0:02 open in state
    assert result["flush"] == result["last"] + 1
    assert result["after_flush"] == [x0, x1, y2]  # emitted by the flush batch, in S3
    assert result["committed"] == result["flush"]
    assert result["flush_lines"] == result["lines"]  # the late file was not read
    assert result["backup"] == f"{spec['checkpoint']}/offsets/.{result['flush']}.tidegate-orig"
    assert result["rewound"] == ['{"logOffset":0}']
    assert result["restored"] == result["lines"]
    assert not [k for k in keys if k.endswith(".crc")], keys
    assert f"ck/counts/offsets/{result['flush']}" in keys
