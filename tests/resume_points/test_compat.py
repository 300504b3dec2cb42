"""Compatibility rules, without a database: Hazelcast's update rules mapped onto Spark."""

from __future__ import annotations

from typing import Any

import pytest

from app.resume_points.compat import (
    HDFS_PROVIDER,
    PROVIDER_CLASS,
    ROCKSDB_PROVIDER,
    check_state,
    provider_name,
)
from app.resume_points.state_schema import from_spark_json, parse_ddl, render, types_only
from tests.support.checkpoints import KEY_SCHEMA, VALUE_SCHEMA

KEY_DDL = "window STRUCT<start: TIMESTAMP, end: TIMESTAMP>, key STRING"


def _source(**over: Any) -> dict[str, Any]:
    info: dict[str, Any] = {
        "conf": {"spark.sql.shuffle.partitions": "2"},
        "operators": [
            {
                "id": 0,
                "name": "stateStoreSave",
                "partitions": 2,
                "key_schema": KEY_SCHEMA,
                "value_schema": VALUE_SCHEMA,
            }
        ],
        "declared": {"stateful_operators": [{"kind": "tumbling_window"}]},
    }
    info.update(over)
    return info


def _query(*ops: dict[str, Any]) -> dict[str, Any]:
    return {"name": "q", "stateful_operators": list(ops)}


def _kinds(problems: list[Any]) -> list[str]:
    return [p.kind for p in problems]


def test_ddl_and_spark_json_compare_by_type() -> None:
    assert types_only(parse_ddl(KEY_DDL)) == types_only(from_spark_json(KEY_SCHEMA))
    assert types_only(parse_ddl("STRUCT<cnt: BIGINT, total DOUBLE NOT NULL>")) == types_only(
        from_spark_json(VALUE_SCHEMA)
    )  # names may differ (Spark compares types by position)
    assert parse_ddl("a DECIMAL(10, 2), b ARRAY<INT>, `c d` MAP<STRING, VARCHAR(3)>") == (
        "struct",
        [
            ("a", "decimal(10,2)"),
            ("b", ("array", "int")),
            ("c d", ("map", "string", "string")),
        ],
    )
    assert render(parse_ddl("count BIGINT COMMENT 'n', sum DOUBLE")) == (
        "struct<count: bigint, sum: double>"
    )
    with pytest.raises(ValueError):
        parse_ddl("a STRUCT<b INT")


def test_compatible_change_has_no_problem() -> None:
    # tumbling -> sliding window: a window's size or slide may change (Hazelcast allows it)
    new = _query({"kind": "sliding_window", "key_schema": KEY_DDL})
    assert check_state("q", new, {"spark.sql.shuffle.partitions": "2"}, "s", _source()) == []


def test_changed_state_partitions() -> None:
    (problem,) = check_state(
        "q", _query({"kind": "tumbling_window"}), {}, "snapshot 's'", _source()
    )
    assert problem.kind == "state_partitions" and (problem.expected, problem.actual) == (2, 200)
    assert "Spark's default" in problem.detail and "keep spark.sql.shuffle.partitions=2" in (
        problem.detail
    )


def test_operator_of_another_kind() -> None:
    conf = {"spark.sql.shuffle.partitions": "2"}
    (problem,) = check_state("q", _query({"kind": "session_window"}), conf, "s", _source())
    assert problem.kind == "operator_kind" and problem.operator == 0
    assert (
        "stateStoreSave" in problem.detail and "sessionWindowStateStoreSaveExec" in problem.detail
    )
    # A user-defined kind is compared with what the snapshot's version declared.
    (problem,) = check_state("q", _query({"kind": "my_custom"}), conf, "s", _source())
    assert problem.kind == "operator_kind" and problem.expected == "tumbling_window"
    problems = check_state(
        "q", _query({"kind": "tumbling_window"}, {"kind": "dedup"}), conf, "s", _source()
    )
    assert _kinds(problems) == ["operator_count"]


def test_changed_value_schema() -> None:
    conf = {"spark.sql.shuffle.partitions": "2"}
    new = _query({"kind": "tumbling_window", "value_schema": "count BIGINT, avg DOUBLE, n BIGINT"})
    (problem,) = check_state("q", new, conf, "s", _source())
    assert problem.kind == "value_schema"
    assert problem.expected == "struct<count: bigint, sum: double>"
    assert problem.actual == "struct<count: bigint, avg: double, n: bigint>"


def test_declarations_compared_when_the_checkpoint_has_no_schema() -> None:
    source = _source()
    source["operators"][0]["value_schema"] = None
    source["declared"]["stateful_operators"][0]["value_schema"] = "c BIGINT"
    new = _query({"kind": "tumbling_window", "value_schema": "c DOUBLE"})
    (problem,) = check_state("q", new, {"spark.sql.shuffle.partitions": "2"}, "s", source)
    assert problem.kind == "value_schema" and "declaration" in problem.detail


@pytest.mark.parametrize(
    ("stored", "wanted", "refused"),
    [
        (HDFS_PROVIDER, ROCKSDB_PROVIDER, True),
        (ROCKSDB_PROVIDER, HDFS_PROVIDER, True),
        (ROCKSDB_PROVIDER, None, True),  # unset: Spark's default, the HDFS-backed store
        (HDFS_PROVIDER, None, False),
        (ROCKSDB_PROVIDER, ROCKSDB_PROVIDER, False),
        # The same class in another package (Spark versions move them): the same store.
        (
            "org.apache.spark.sql.execution.streaming.RocksDBStateStoreProvider",
            ROCKSDB_PROVIDER,
            False,
        ),
    ],
)
def test_a_changed_state_store_provider_is_refused_with_the_way_out(
    stored: str, wanted: str | None, refused: bool
) -> None:
    """Issue 25: HDFS-backed <-> RocksDB, Spark's default included. Spark pins the provider
    in the checkpoint, so the version's would be ignored; refused before anything stops."""
    source = _source(conf={PROVIDER_CLASS: stored})
    conf = {"spark.sql.shuffle.partitions": "2", **({PROVIDER_CLASS: wanted} if wanted else {})}
    problems = check_state("q", _query(), conf, "snapshot 's'", source)
    assert _kinds(problems) == (["state_store_provider"] if refused else [])
    if refused:
        (problem,) = problems
        assert provider_name(stored) in problem.detail and "initialize" in problem.detail
        assert problem.expected == stored and problem.actual == (wanted or HDFS_PROVIDER)
