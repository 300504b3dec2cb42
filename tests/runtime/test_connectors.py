"""A Kafka source without Spark's Kafka connector on the driver: said plainly before anything
starts (issue 52), on a real SparkSession without the connector's jars."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from tidegate_runtime.sources.connectors import KAFKA_PROVIDER, MissingConnector, _loadable
from tidegate_runtime.sources.connectors import require_connectors as require

pytestmark = pytest.mark.spark

KAFKA = {"name": "counts", "sources": [{"name": "clicks", "kind": "kafka", "options": {}}]}
LOG = {"name": "log", "sources": [{"name": "events", "kind": "eventlog", "options": {}}]}


def test_a_kafka_source_without_its_connector_names_what_to_add(spark: SparkSession) -> None:
    assert not _loadable(spark, KAFKA_PROVIDER)  # this session has no connector jars
    assert _loadable(spark, "org.apache.spark.sql.SparkSession")  # the check sees Spark's own
    require(spark, {"log": LOG})  # no Kafka source: nothing needed
    with pytest.raises(MissingConnector) as refused:
        require(spark, {"counts": KAFKA, "log": LOG})
    said = str(refused.value)
    assert "query counts declares a Kafka source" in said
    assert f"spark-sql-kafka-0-10_2.13:{spark.version}" in said and "spark.jars" in said
