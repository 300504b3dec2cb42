"""What a dry run's driver said (``read_result``: the verdict it wrote in its scratch root),
read: a refusal names the query, the operator and what differs; a known transient Spark
failure is an infrastructure error that proves nothing either way (another attempt follows)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tidegate_runtime import contract
from tidegate_runtime.checkpoints.held_dir import HeldDir

# Dry-run drivers at most per operation when they fail for infrastructure reasons.
ATTEMPTS = 3

# Known transient Spark infrastructure failures (the driver's or a query's error text), kept
# small on purpose: anything else stays a refusal. Seen on a loaded machine: the event-log
# Python data source's worker not connecting back in time; Python workers crashing or exiting;
# the driver's connections to its executors or workers refused or reset.
TRANSIENT_SIGNATURES = re.compile(
    r"Python worker failed to connect back"
    r"|Python worker (?:exited unexpectedly|crashed)"
    r"|Connection (?:refused|reset)",
    re.IGNORECASE,
)

# A state or plan incompatibility: never infrastructure, whatever else the text says.
INCOMPATIBLE = re.compile(
    r"STATE_STORE|STATE_SCHEMA|IN_STATE_METADATA|STATEFUL_OPERATOR|INCOMPATIBLE|NOT_COMPATIBLE"
)

# What dry_run reports for the queries a failure elsewhere in the driver did not let run.
_CONSEQUENCES = frozenset({"QUERY_NOT_STARTED", "QUERY_ENDED"})

_OPERATOR = re.compile(r"OperatorId: (\d+) -> OperatorName: (\w+)")

_SCHEMA = re.compile(r"Existing (\w+)_schema=(\S+) and new \w+_schema=(\S+?)\.?(?:\s|$)")

# The error line a Python traceback ends with ("ValueError: cannot parse …").
_PYTHON_ERROR = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit)\b.*)$", re.MULTILINE)


def infrastructure_error(outcome: dict[str, Any]) -> str | None:
    """The first line of the error when a failed dry run failed for a known transient Spark
    infrastructure reason (``TRANSIENT_SIGNATURES``), else None (a refusal). Infrastructure only
    when no query's failure is a state or plan incompatibility and every failed query failed
    that way (or did not get to run because of it); a driver that ended without a result counts
    when its own error text matches. A timeout stays a refusal."""
    if outcome.get("ok") or outcome.get("timeout"):
        return None
    failed = [r for r in (outcome.get("queries") or {}).values() if not r.get("ok")]
    errors = [(str(r.get("error_class") or ""), str(r.get("message") or "")) for r in failed]
    if not errors:
        errors = [("", str(outcome.get("message") or ""))]
    if any(INCOMPATIBLE.search(f"{error_class} {message}") for error_class, message in errors):
        return None
    found = None
    for error_class, message in errors:
        match = TRANSIENT_SIGNATURES.search(f"{message} {error_class}")
        if match is None:
            if error_class in _CONSEQUENCES:
                continue
            return None
        if found is None:
            lines = (ln.strip() for ln in message.splitlines() if TRANSIENT_SIGNATURES.search(ln))
            found = next(lines, match.group(0))
    return found


def problems(outcome: dict[str, Any], operators: dict[str, list[dict[str, Any]]]) -> list[str]:
    """One line per refused query: the query, the operator and what differs."""
    lines = []
    for query, result in sorted((outcome.get("queries") or {}).items()):
        if result.get("ok"):
            continue
        message = str(result.get("message") or "")
        what = _what_differs(str(result.get("error_class")), message, operators.get(query) or [])
        lines.append(f"query '{query}': {what} [{result.get('error_class')}]")
    if not lines and not outcome.get("ok"):
        lines.append(str(outcome.get("message") or "the dry run failed"))
    return lines


def _what_differs(error_class: str, message: str, operators: list[dict[str, Any]]) -> str:
    if "NOT_MATCH_IN_STATE_METADATA" in error_class and "in current batch" in message:
        # "Stateful operators in the metadata: [(OperatorId: 0 -> OperatorName: a)];
        #  Stateful operators in current batch: [(OperatorId: 0 -> OperatorName: b)]"
        saved_text, new_text = message.split("in current batch", 1)
        saved, new = dict(_OPERATOR.findall(saved_text)), dict(_OPERATOR.findall(new_text))
        diffs = [
            f"operator {op} is {saved.get(op, 'absent')} in the saved state but "
            f"{new.get(op, 'absent')} in the new version"
            for op in sorted(set(saved) | set(new), key=int)
            if saved.get(op) != new.get(op)
        ]
        return "; ".join(diffs) or message
    schema = _SCHEMA.search(message)
    if schema:
        part, had, wants = schema.group(1), schema.group(2).strip(), schema.group(3).strip()
        where = (
            f"operator 0 ({operators[0].get('name')})"
            if len(operators) == 1
            else "a stateful operator (Spark does not say which)"
        )
        return f"the state {part} schema of {where} changed: saved {had}, new {wants}"
    if "Traceback (most recent call last)" in message:
        # The app's own code failed (a trial batch on real records): its error, not the header.
        raised = _PYTHON_ERROR.findall(message)
        if raised:
            return str(raised[-1]).strip()
    return message.splitlines()[0] if message else error_class


# A verdict is a few lines per query; more is not a verdict.
RESULT_LIMIT = 1024 * 1024


def read_result(scratch: Path) -> dict[str, Any] | None:
    """The verdict a dry run wrote in its scratch root, or None. The driver wrote it, so it is
    read as any driver-written file (issue 51 M5): a regular file, not through a link, a FIFO
    never waited on, at most ``RESULT_LIMIT`` bytes."""
    try:
        with HeldDir.at(scratch) as folder:
            result = json.loads(folder.read(contract.DRY_RUN_RESULT_FILE, RESULT_LIMIT))
    except (OSError, ValueError):
        return None
    return result if isinstance(result, dict) else None
