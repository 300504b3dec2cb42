"""PSTL's two duration formats: backoffs (``50s``, ``100ms``) and triggers (``15 SECONDS``);
and Spark's progress times (``epoch``)."""

from __future__ import annotations

import functools
import re
from datetime import datetime, timedelta
from typing import Any

_BACKOFF = re.compile(r"^(\d+)(us|ms|s|m|min|h|d)$")
_BACKOFF_UNITS = {
    "us": timedelta(microseconds=1),
    "ms": timedelta(milliseconds=1),
    "s": timedelta(seconds=1),
    "m": timedelta(minutes=1),
    "min": timedelta(minutes=1),
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
}

_TRIGGER = re.compile(r"^\s*(\d+)\s+([A-Za-z]+)\s*$")
_TRIGGER_UNITS_MS = {
    "MILLISECOND": 1,
    "MILLISECONDS": 1,
    "SECOND": 1000,
    "SECONDS": 1000,
    "MINUTE": 60_000,
    "MINUTES": 60_000,
    "HOUR": 3_600_000,
    "HOURS": 3_600_000,
}


def parse_duration(text: str) -> timedelta:
    """``50s``, ``100ms``, ``250us``, ``1m``/``1min``, ``1h``, ``1d`` (no space, as in PSTL)."""
    if not isinstance(text, str):
        raise ValueError(f"'{text}' is not a duration: use a string such as 50s or 1m")
    return _parse_duration(text)


@functools.lru_cache(maxsize=1024)  # a page of jobs parses the same few policies again and again
def _parse_duration(text: str) -> timedelta:
    m = _BACKOFF.match(text.strip())
    if not m:
        raise ValueError(
            f"'{text}' is not a duration: use a number and a unit with no space, "
            "e.g. 50s, 100ms, 250us, 1m, 1min, 1h, 1d"
        )
    try:
        return int(m.group(1)) * _BACKOFF_UNITS[m.group(2)]
    except OverflowError:
        raise ValueError(f"'{text}' is too long a duration") from None


def parse_trigger(text: str) -> int:
    """A trigger interval such as ``15 SECONDS`` or ``1 MINUTE``, in milliseconds."""
    m = _TRIGGER.match(text) if isinstance(text, str) else None
    unit = m.group(2).upper() if m else ""
    if not m or unit not in _TRIGGER_UNITS_MS:
        raise ValueError(
            f"'{text}' is not a trigger interval: use '<number> <unit>' with a unit among "
            "MILLISECOND(S), SECOND(S), MINUTE(S), HOUR(S), e.g. '15 SECONDS' or '5 MINUTES'"
        )
    ms = int(m.group(1)) * _TRIGGER_UNITS_MS[unit]
    if ms <= 0:
        raise ValueError(f"'{text}': a trigger interval must be greater than zero")
    return ms


def normalise_trigger(text: str) -> str:
    m = _TRIGGER.match(text)
    assert m is not None
    return f"{int(m.group(1))} {m.group(2).upper()}"


def epoch(text: Any) -> float | None:
    """An ISO-8601 time (Spark's ``2026-11-23T16:00:00.000Z``) in epoch seconds, or None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None
