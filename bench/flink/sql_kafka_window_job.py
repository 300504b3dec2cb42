# The Flink anchor's stateful job (../shared/anchors/flink/sql_window_job.py) reading a Kafka
# topic instead of its datagen source: the records bench/kafka_upgrade.py produces for the Spark
# pipelines too (key: a key as text, value: a number as text, event time: the Kafka timestamp).
# Pure Table API/SQL (no Python UDFs: it runs entirely in the JVM), 1 s event-time tumbling
# window COUNT and SUM per key -> print sink (the TaskManager's .out, what the anchor's
# bench.py watches for the first output after a restore).
#
# Run by the anchor's harness (run.sh bench, `flink run -py`), which passes no arguments: the
# topic comes from the environment the client inherits.
#   KAFKA_BOOTSTRAP  127.0.0.1:<port>
#   KAFKA_TOPIC      the topic
#   FLINK_KAFKA_JAR  the flink-sql-connector-kafka jar (jvm/deps.toml, group flink-kafka)
# A fresh job starts at the topic's end (as the Spark queries do); one restored from a savepoint
# goes on from the offsets in it. As Spark's, it commits no offsets to the consumer group.
import os
from pathlib import Path

from pyflink.table import EnvironmentSettings, TableEnvironment

t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
c = t_env.get_config()
c.set("pipeline.name", "sql-kafka-window-count")
c.set("parallelism.default", "1")
c.set("pipeline.jars", Path(os.environ["FLINK_KAFKA_JAR"]).resolve().as_uri())
# A partition without records for a while must not hold the watermark (and the output) back.
c.set("table.exec.source.idle-timeout", "2 s")

t_env.execute_sql(f"""
CREATE TABLE src (
  k STRING,
  v STRING,
  ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL,
  WATERMARK FOR ts AS ts
) WITH (
  'connector' = 'kafka',
  'topic' = '{os.environ["KAFKA_TOPIC"]}',
  'properties.bootstrap.servers' = '{os.environ["KAFKA_BOOTSTRAP"]}',
  'properties.group.id' = 'tidegate-bench-flink',
  'properties.commit.offsets.on.checkpoint' = 'false',
  'scan.startup.mode' = 'latest-offset',
  'key.format' = 'raw',
  'key.fields' = 'k',
  'value.format' = 'raw',
  'value.fields-include' = 'EXCEPT_KEY'
)""")

t_env.execute_sql("""
CREATE TABLE snk (
  window_end TIMESTAMP(3),
  k STRING,
  cnt BIGINT,
  s DOUBLE
) WITH ('connector' = 'print', 'print-identifier' = 'OUT')""")

t_env.execute_sql("""
INSERT INTO snk
SELECT window_end, k, COUNT(*) AS cnt, SUM(TRY_CAST(v AS DOUBLE)) AS s
FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY window_start, window_end, k
""")
