"""Can a query of a new version start from the state of a snapshot's query? Decided before
anything is stopped, from what the version declares and what the checkpoint recorded.

Refused, following Hazelcast Jet's update rules mapped onto Spark:

* a stateful query renamed without a mapping (its state would be silently dropped);
* a stateful operator of another kind at the same position (sliding window -> session
  window): the version's declared ``kind`` against the snapshot's declared kind and the
  operator Spark recorded in ``state/<op>/_metadata`` (``stateStoreSave``, ``dedupe``, ...);
* a different number of stateful operators (Spark numbers operators by position);
* a changed key or value state schema (the "accumulator type"), when the version declares it
  as DDL; compared by type and position, as Spark does;
* a changed number of state partitions: ``spark.sql.shuffle.partitions`` of the new version
  against the partitions of the snapshot's state (Spark pins it once a checkpoint exists);
* a changed state store provider (HDFS-backed <-> RocksDB), Spark's default included.

A change inside the app with the same declarations (``avg`` for ``sum``, a session window for
a tumbling one, another grouping key) is invisible here. ``update`` (strategy snapshot) and
``submit`` from a snapshot or resume point therefore add a dry run of the new version's app
on a scratch copy of the state it would resume, before anything stops or starts
(app/worker/dry_run/scratch_copy.py, tidegate_runtime/driver/dry_run.py); ``POST …/compatibility``
answers from the declarations and checkpoints only (it is synchronous; a dry run starts a
Spark driver).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from app.resume_points.state_schema import from_spark_json, parse_ddl, render, types_only

SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
SPARK_DEFAULT_SHUFFLE_PARTITIONS = "200"
PROVIDER_CLASS = "spark.sql.streaming.stateStore.providerClass"
HDFS_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
CHANGELOG_CHECKPOINTING = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"

# Declared kind -> the operatorName(s) Spark 4 records for it.
KIND_OPERATORS: dict[str, frozenset[str]] = {
    "tumbling_window": frozenset({"stateStoreSave"}),
    "sliding_window": frozenset({"stateStoreSave"}),
    "window": frozenset({"stateStoreSave"}),
    "aggregate": frozenset({"stateStoreSave"}),
    "aggregation": frozenset({"stateStoreSave"}),
    "session_window": frozenset({"sessionWindowStateStoreSaveExec"}),
    "dedup": frozenset({"dedupe"}),
    "dedupe": frozenset({"dedupe"}),
    "dedup_within_watermark": frozenset({"dedupeWithinWatermark"}),
    "join": frozenset({"symmetricHashJoin"}),
    "stream_join": frozenset({"symmetricHashJoin"}),
    "flat_map_groups_with_state": frozenset({"flatMapGroupsWithState"}),
    "map_groups_with_state": frozenset({"flatMapGroupsWithState"}),
    "apply_in_pandas_with_state": frozenset({"applyInPandasWithState"}),
    "transform_with_state": frozenset(
        {
            "transformWithStateExec",
            "transformWithStateInPandasExec",
            "transformWithStateInPySparkExec",
        }
    ),
    "limit": frozenset({"globalLimit"}),
}
# Kinds that may replace each other: a window's size or slide may change (Hazelcast allows it).
INTERCHANGEABLE = (frozenset({"tumbling_window", "sliding_window", "window"}),)


@dataclass(frozen=True)
class Problem:
    query: str
    kind: str
    detail: str
    operator: int | None = None
    expected: Any = None
    actual: Any = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def kinds_compatible(old: str, new: str) -> bool:
    return old == new or any(old in group and new in group for group in INTERCHANGEABLE)


def is_stateful(query: dict[str, Any]) -> bool:
    return bool(query.get("stateful_operators"))


def has_state(info: dict[str, Any]) -> bool:
    """Does a snapshot's (or a run's) query hold state? Its checkpoint's ``state/`` folder
    says so even when neither version declared a stateful operator."""
    return (
        bool(info.get("operators"))
        or bool(info.get("state_dir"))
        or bool((info.get("declared") or {}).get("stateful_operators"))
    )


def provider_name(provider_class: str | None) -> str:
    """A state store provider's class name, without its package (which Spark versions move),
    Spark's default (HDFS-backed) when the conf leaves it unset."""
    return (provider_class or HDFS_PROVIDER).rsplit(".", 1)[-1]


def effective_partitions(conf: dict[str, Any]) -> str:
    return str(conf.get(SHUFFLE_PARTITIONS, SPARK_DEFAULT_SHUFFLE_PARTITIONS))


def check_state(
    target_name: str,
    target_query: dict[str, Any],
    target_conf: dict[str, Any],
    source_label: str,
    source: dict[str, Any],
) -> list[Problem]:
    """Problems with starting ``target_query`` from the state ``source`` describes."""
    problems: list[Problem] = []
    operators = list(source.get("operators") or [])
    if not operators:
        return problems
    partitions = effective_partitions(target_conf)
    stored = {int(op["partitions"]) for op in operators if op.get("partitions")}
    for count in sorted(stored):
        if str(count) != partitions:
            how = "" if SHUFFLE_PARTITIONS in target_conf else " (Spark's default: not set)"
            problems.append(
                Problem(
                    target_name,
                    "state_partitions",
                    f"{source_label} has state in {count} partitions; the version sets "
                    f"{SHUFFLE_PARTITIONS}={partitions}{how}. Spark fixes the number of state "
                    f"partitions once a checkpoint exists: keep {SHUFFLE_PARTITIONS}={count}, "
                    "or start this query with fresh state (resume point mode 'initialize').",
                    expected=count,
                    actual=int(partitions) if partitions.isdigit() else partitions,
                )
            )
    stored_provider = (source.get("conf") or {}).get(PROVIDER_CLASS)
    wanted_provider = target_conf.get(PROVIDER_CLASS)
    if stored_provider and provider_name(stored_provider) != provider_name(wanted_provider):
        how = (
            f"sets {PROVIDER_CLASS}={wanted_provider}"
            if wanted_provider
            else f"leaves {PROVIDER_CLASS} unset (Spark's default, {provider_name(None)})"
        )
        problems.append(
            Problem(
                target_name,
                "state_store_provider",
                f"{source_label} was written by {provider_name(stored_provider)}; the version "
                f"{how}. Spark pins the provider in the checkpoint (it would keep the old one "
                "and ignore the version's), and the two keep state in different formats: set "
                f"{PROVIDER_CLASS}={stored_provider}, or start this query with fresh state "
                "(resume point mode 'initialize').",
                expected=stored_provider,
                actual=wanted_provider or HDFS_PROVIDER,
            )
        )

    declared_new = list(target_query.get("stateful_operators") or [])
    declared_old = list((source.get("declared") or {}).get("stateful_operators") or [])
    if not declared_new:
        return problems  # nothing declared: Spark's own checks at start are all we have
    if len(declared_new) != len(operators):
        problems.append(
            Problem(
                target_name,
                "operator_count",
                f"{source_label} has {len(operators)} stateful operator(s) "
                f"({', '.join(str(o.get('name')) for o in operators)}); the version declares "
                f"{len(declared_new)}. Spark identifies state by operator position, so adding "
                "or removing a stateful operator inside a query needs fresh state for it: "
                "start the query with resume point mode 'initialize', or add the new "
                "aggregation as a separate query.",
                expected=len(operators),
                actual=len(declared_new),
            )
        )
        return problems
    for index, (new, op) in enumerate(zip(declared_new, operators, strict=True)):
        new_kind = str(new.get("kind"))
        old = declared_old[index] if index < len(declared_old) else {}
        old_kind = old.get("kind")
        spark_name = op.get("name")
        expected_names = KIND_OPERATORS.get(new_kind)
        if expected_names is not None and spark_name and spark_name not in expected_names:
            problems.append(
                Problem(
                    target_name,
                    "operator_kind",
                    f"operator {index} of {source_label} is Spark's {spark_name}"
                    + (f" (declared {old_kind})" if old_kind else "")
                    + f"; the version declares {new_kind}, which Spark runs as "
                    f"{' or '.join(sorted(expected_names))}. A stateful operator cannot change "
                    "kind and keep its state.",
                    operator=index,
                    expected=old_kind or spark_name,
                    actual=new_kind,
                )
            )
        elif old_kind and not kinds_compatible(str(old_kind), new_kind):
            problems.append(
                Problem(
                    target_name,
                    "operator_kind",
                    f"operator {index} was declared {old_kind} in {source_label}; the version "
                    f"declares {new_kind}. A stateful operator cannot change kind and keep "
                    "its state.",
                    operator=index,
                    expected=old_kind,
                    actual=new_kind,
                )
            )
        for part in ("key", "value"):
            ddl = new.get(f"{part}_schema")
            if not ddl:
                continue
            stored_schema = op.get(f"{part}_schema")
            try:
                wanted = parse_ddl(str(ddl))
            except ValueError as exc:
                problems.append(
                    Problem(
                        target_name,
                        f"{part}_schema",
                        f"operator {index}: the declared {part}_schema cannot be parsed: {exc}",
                        operator=index,
                    )
                )
                continue
            if stored_schema is not None:
                have = from_spark_json(stored_schema)
                origin = "the checkpoint's schema file"
            elif old.get(f"{part}_schema"):
                try:
                    have = parse_ddl(str(old[f"{part}_schema"]))
                except ValueError:
                    continue
                origin = "the snapshot version's declaration"
            else:
                continue
            if types_only(have) != types_only(wanted):
                problems.append(
                    Problem(
                        target_name,
                        f"{part}_schema",
                        f"operator {index}: the state {part} schema changed. {source_label} "
                        f"has {render(have)} ({origin}); the version declares {render(wanted)}. "
                        "Spark cannot read state written with another schema (changed "
                        "aggregation or key): keep the schema or start with fresh state.",
                        operator=index,
                        expected=render(have),
                        actual=render(wanted),
                    )
                )
    return problems
