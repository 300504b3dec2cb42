"""State schemas, from a version's DDL and from Spark's JSON schema files, in one comparable
form: ("struct", [(name, type), ...]); other types are ("array", t), ("map", k, v) or a
canonical primitive name. Compared by type and position, as Spark does (compat.py)."""

from __future__ import annotations

import re
from typing import Any

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
