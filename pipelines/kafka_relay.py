"""One Kafka topic relayed to another through Spark's Kafka sink: each output record carries
the key of the record it came from and, as its value, ``<partition>:<offset>:<value>`` of that
record, so a reader can tell every input record's copies apart.

Spark's Kafka sink is **at-least-once**: it keeps no log of the batches it wrote, so a batch
that runs again after a failure (a killed driver, a query restarted on its checkpoint) writes
its records again. The copies are bounded by that batch: ``--max-offsets-per-trigger`` bounds
them. ``--row-delay-ms`` slows each record down (tests use it to stop a driver mid-batch).

    spark-submit --jars <spark-kafka jars> pipelines/kafka_relay.py \\
        --bootstrap 127.0.0.1:9092 --input clicks --output-topic relayed [--checkpoint /ck]
"""

from __future__ import annotations

import argparse
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from tidegate_runtime.control import Runtime

QUERY = "relay"


def main(argv: list[str]) -> None:
    spark = SparkSession.builder.appName("kafka_relay").getOrCreate()
    runtime = Runtime.from_spark(spark)
    parser = argparse.ArgumentParser(prog="kafka_relay")
    parser.add_argument("--bootstrap", required=True, help="kafka.bootstrap.servers")
    parser.add_argument("--input", required=True, help="the topic read")
    parser.add_argument("--output-topic", required=True, help="the topic written")
    parser.add_argument("--checkpoint", required=not runtime.managed)
    parser.add_argument("--max-offsets-per-trigger", default="100")
    parser.add_argument("--row-delay-ms", type=int, default=0)
    args = parser.parse_args(argv)

    records = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.input)
        .option("maxOffsetsPerTrigger", args.max_offsets_per_trigger)
        .options(**runtime.reader_options(QUERY))
        .load()
    )
    origin = F.concat_ws(
        ":", F.col("partition").cast("string"), F.col("offset").cast("string"), F.col("value")
    )
    if args.row_delay_ms:
        delay = args.row_delay_ms / 1000

        def slowly(text: str) -> str:
            time.sleep(delay)
            return text

        origin = F.udf(slowly, StringType())(origin)
    relayed = records.select("key", origin.cast("binary").alias("value"))
    writer = (
        relayed.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.output_topic)
    )
    runtime.start(QUERY, writer, trigger="1 second", checkpoint=args.checkpoint)
    runtime.await_termination()


if __name__ == "__main__":
    main(sys.argv[1:])
