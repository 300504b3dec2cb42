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
* a changed state store provider.

A change inside the app with the same declarations (``avg`` for ``sum``, a session window for
a tumbling one, another grouping key) is invisible here. ``update`` (strategy snapshot) and
``submit`` from a snapshot or resume point therefore add a dry run of the new version's app
on a scratch copy of the state it would resume, before anything stops or starts
(app/worker/preflight.py, tidegate_runtime/trial_batch.py); ``POST …/compatibility``
answers from the declarations and checkpoints only (it is synchronous; a dry run starts a
Spark driver).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
SPARK_DEFAULT_SHUFFLE_PARTITIONS = "200"
PROVIDER_CLASS = "spark.sql.streaming.stateStore.providerClass"

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
    if stored_provider and wanted_provider and stored_provider != wanted_provider:
        problems.append(
            Problem(
                target_name,
                "state_store_provider",
                f"{source_label} was written by {stored_provider}; the version sets "
                f"{PROVIDER_CLASS}={wanted_provider}. State cannot move between providers.",
                expected=stored_provider,
                actual=wanted_provider,
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


# ---- schemas: DDL and Spark's JSON into one comparable form ----------------------------------
#
# A schema is ("struct", [(name, type), ...]); other types are ("array", t), ("map", k, v) or a
# canonical primitive name.

Schema = Any

_ALIASES = {
    "long": "bigint",
    "bigint": "bigint",
    "integer": "int",
    "int": "int",
    "short": "smallint",
    "smallint": "smallint",
    "byte": "tinyint",
    "tinyint": "tinyint",
    "real": "float",
    "float": "float",
    "double": "double",
    "bool": "boolean",
    "boolean": "boolean",
    "string": "string",
    "binary": "binary",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ltz": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "void": "void",
    "null": "void",
    "variant": "variant",
}


def _primitive(name: str) -> str:
    lowered = name.strip().lower()
    if re.fullmatch(r"(var)?char\(\d+\)", lowered):
        return "string"
    match = re.fullmatch(r"(?:decimal|dec|numeric)(?:\((\d+)\s*(?:,\s*(\d+))?\))?", lowered)
    if match:
        return f"decimal({match.group(1) or 10},{match.group(2) or 0})"
    return _ALIASES.get(lowered, lowered)


_TOKEN = re.compile(
    r"\s*(`(?:[^`]|``)*`|[A-Za-z_][A-Za-z0-9_]*(?:\(\s*\d+\s*(?:,\s*\d+\s*)?\))?|[<>,:]|'[^']*')"
)


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            raise ValueError(f"unexpected text at {pos}: {text[pos : pos + 20]!r}")
        out.append(match.group(1))
        pos = match.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise ValueError(f"expected {expected or 'more'} but found {token or 'the end'}")
        self.pos += 1
        return token

    def name(self) -> str:
        token = self.take()
        return token[1:-1].replace("``", "`") if token.startswith("`") else token

    def fields(self, closing: str | None) -> list[tuple[str, Schema]]:
        fields = []
        while True:
            name = self.name()
            if self.peek() == ":":
                self.take(":")
            fields.append((name, self.type()))
            while self.peek() is not None and self.peek() not in (",", closing):
                self.take()  # NOT NULL, COMMENT '...': irrelevant to compatibility
            if self.peek() == ",":
                self.take(",")
                continue
            return fields

    def type(self) -> Schema:
        token = self.take()
        lowered = token.lower()
        if lowered == "struct":
            self.take("<")
            if self.peek() == ">":
                self.take(">")
                return ("struct", [])
            fields = self.fields(">")
            self.take(">")
            return ("struct", fields)
        if lowered == "array":
            self.take("<")
            element = self.type()
            self.take(">")
            return ("array", element)
        if lowered == "map":
            self.take("<")
            key = self.type()
            self.take(",")
            value = self.type()
            self.take(">")
            return ("map", key, value)
        return _primitive(token)


def parse_ddl(text: str) -> Schema:
    """``"window STRUCT<start: TIMESTAMP, end: TIMESTAMP>, key STRING"`` or
    ``"STRUCT<...>"`` -> a comparable schema."""
    parser = _Parser(text)
    if len(parser.tokens) > 1 and parser.tokens[0].lower() == "struct" and parser.tokens[1] == "<":
        schema = parser.type()
        if parser.peek() is not None:
            raise ValueError(f"unexpected {parser.peek()!r} after the struct")
        return schema
    fields = parser.fields(None)
    if parser.peek() is not None:
        raise ValueError(f"unexpected {parser.peek()!r}")
    return ("struct", fields)


def from_spark_json(data: Any) -> Schema:
    """Spark's JSON schema (as in ``state/<op>/<part>/_metadata/schema``) -> comparable."""
    if isinstance(data, str):
        return _primitive(data)
    kind = data.get("type")
    if kind == "struct":
        return ("struct", [(f["name"], from_spark_json(f["type"])) for f in data["fields"]])
    if kind == "array":
        return ("array", from_spark_json(data["elementType"]))
    if kind == "map":
        return ("map", from_spark_json(data["keyType"]), from_spark_json(data["valueType"]))
    if kind == "udt":
        return from_spark_json(data.get("sqlType", "udt"))
    return _primitive(str(kind))


def types_only(schema: Schema) -> Any:
    if isinstance(schema, tuple) and schema[0] == "struct":
        return ("struct", tuple(types_only(t) for _, t in schema[1]))
    if isinstance(schema, tuple) and schema[0] == "array":
        return ("array", types_only(schema[1]))
    if isinstance(schema, tuple) and schema[0] == "map":
        return ("map", types_only(schema[1]), types_only(schema[2]))
    return schema


def render(schema: Schema) -> str:
    if isinstance(schema, tuple) and schema[0] == "struct":
        return "struct<" + ", ".join(f"{n}: {render(t)}" for n, t in schema[1]) + ">"
    if isinstance(schema, tuple) and schema[0] == "array":
        return f"array<{render(schema[1])}>"
    if isinstance(schema, tuple) and schema[0] == "map":
        return f"map<{render(schema[1])}, {render(schema[2])}>"
    return str(schema)
