"""The connectors a job's declared sources need, checked on the driver before anything starts:
a Kafka source without Spark's Kafka connector on the classpath would fail at its first
``load()`` with Spark's "Failed to find data source: kafka" deep in a stack trace; this says
what to add instead."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession

# The class Spark finds the "kafka" format by (spark-sql-kafka-0-10's DataSourceRegister).
KAFKA_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"


class MissingConnector(RuntimeError):
    """A declared source's connector is not on the driver's classpath."""


def require_connectors(spark: SparkSession, declared: Mapping[str, Mapping[str, Any]]) -> None:
    """MissingConnector naming the queries and the artifact, for a Kafka source without its
    connector on this driver."""
    kafka = sorted(
        name
        for name, spec in declared.items()
        if any(s.get("kind") == "kafka" for s in spec.get("sources", []))
    )
    if not kafka or _loadable(spark, KAFKA_PROVIDER):
        return
    version = spark.version
    raise MissingConnector(
        f"query {', '.join(kafka)} declares a Kafka source, but Spark's Kafka connector is not "
        f"on this driver's classpath: add org.apache.spark:spark-sql-kafka-0-10_2.13:{version} "
        "and its dependencies to the cluster's jars, or to the version's spark.jars (an admin's "
        "conf; `python -m app.devtools.jvm_deps path spark-kafka --sep ,` lists them)."
    )


def _loadable(spark: SparkSession, name: str) -> bool:
    """Whether the driver's JVM loads ``name`` (with the jars spark.jars added, which Spark's
    own class loader holds: the thread's context loader, as Spark's data source lookup uses)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    return bool(jvm.org.apache.spark.util.Utils.classIsLoadable(name))
