"""A query's declared sink (its version's ``sink``), checked against what the job's writer
says before the query starts: a query that writes elsewhere than its version declares is
refused, so what the control plane checked ahead of an update (a file sink's log against the
state it resumes) is what the query really writes.

Spark has no public getter for a writer's format and options; they are read from the JVM
writer's fields. On a Spark whose writer keeps them elsewhere the check is skipped, with a
warning, and the control plane checks the sink from the run's first progress instead.
Standard library and pyspark only: it runs inside Spark drivers."""

from __future__ import annotations

import logging
import os
from typing import Any

from pyspark.sql.streaming.readwriter import DataStreamWriter

from tidegate_runtime.driver.channel import TidegateRuntimeError

log = logging.getLogger("tidegate.runtime")


class UndeclaredSink(TidegateRuntimeError):
    pass


def _field(jwriter: Any, name: str) -> Any:
    field = jwriter.getClass().getDeclaredField(name)
    field.setAccessible(True)
    return field.get(jwriter)


def written_to(writer: DataStreamWriter) -> tuple[str, Any] | None:
    """(format, a getter of the writer's options by name) or None where unreadable."""
    try:
        jwriter = writer._jwrite  # type: ignore[attr-defined]
        fmt = str(_field(jwriter, "source"))
        options = _field(jwriter, "extraOptions")
    except Exception as exc:  # another Spark's writer: not checked here
        log.warning("cannot read the writer's sink on this Spark (%s); not checked", exc)
        return None

    def option(key: str) -> str | None:
        found = options.get(key)  # a Scala Option, keys case-insensitive
        return None if found.isEmpty() else str(found.get())

    return fmt, option


def _local(path: str) -> str:
    raw = path[len("file:") :] if path.startswith("file:") else path
    if raw.startswith("//"):
        raw = "/" + raw.lstrip("/")
    return raw if "://" in raw else os.path.normpath(os.path.abspath(raw))


def declared_sink(sink: dict[str, Any]) -> dict[str, Any]:
    """A version's sink as a driver's conf carries it: the names of its options, never their
    values (the Spark UI shows the conf, and a sink option may be a password). A run's
    runtime gets the values in its directives, over its own channel."""
    return {
        "format": sink["format"],
        "path": sink.get("path"),
        "option_keys": sorted(sink.get("options") or {}),
    }


def require_declared(
    name: str,
    writer: DataStreamWriter,
    declared: dict[str, Any],
    options: dict[str, str] | None = None,
) -> None:
    """Refuse a writer that does not write where the version declares: its format, its path,
    and each declared option (its value too when ``options``, from the run's directives, has
    it; a dry run, with no channel, checks that the option is set). Values are never shown."""
    seen = written_to(writer)
    if seen is None:
        return
    fmt, option = seen
    wrong = []
    if fmt.lower() != str(declared["format"]).lower():
        wrong.append(f"its format is {fmt}, not {declared['format']}")
    if declared.get("path"):
        path = option("path")
        if path is None or _local(path) != _local(str(declared["path"])):
            wrong.append(f"it writes to {path or 'no path'}, not {declared['path']}")
    for key in sorted(set(declared.get("option_keys") or ()) | set(options or {})):
        value = option(key)
        if value is None:
            wrong.append(f"its option {key} is missing")
        elif options is not None and key in options and value != str(options[key]):
            wrong.append(f"its option {key} has another value")  # values may be secret
    if wrong:
        raise UndeclaredSink(
            f"query '{name}' does not write where its version declares: {'; '.join(wrong)}. "
            "Change the job's code, or declare the sink it writes to in a new version."
        )
