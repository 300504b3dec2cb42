"""What a drain that ran out of time says about the queries that kept it from its end
(app/worker/runs/control.py::query_failures_since): the queries that failed since the drain
was asked for, in the run's current attempt, each with the first line of its last error."""

from __future__ import annotations

from app.runs.models import Run
from app.worker.runs.control import query_failures_since

ASKED = "2026-12-06T07:00:00+00:00"


def _run(restarts: dict[str, dict[str, object]]) -> Run:
    return Run(attempt=2, query_restarts=restarts)


def test_the_failures_since_the_drain_was_asked_for_are_named() -> None:
    run = _run(
        {
            "counts": {
                "attempt": 2,
                "failures": 3,
                "last_failed_at": "2026-12-06T07:00:12+00:00",
                "last_error": "org.apache.kafka.common.errors.TimeoutException: Timed out\n"
                "\tat org.apache.kafka...",
            },
            "earlier": {  # before the drain: not what kept it
                "attempt": 2,
                "failures": 1,
                "last_failed_at": "2026-12-06T06:59:00+00:00",
                "last_error": "boom",
            },
            "older_attempt": {
                "attempt": 1,
                "failures": 9,
                "last_failed_at": "2026-12-06T07:00:30+00:00",
                "last_error": "gone",
            },
        }
    )
    said = query_failures_since(run, ASKED)
    assert said == (
        "query 'counts' failed 3 time(s) in a row, last: "
        "org.apache.kafka.common.errors.TimeoutException: Timed out"
    )
    assert query_failures_since(_run({}), ASKED) == ""
