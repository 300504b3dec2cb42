"""The run state machine: the run states' names and which changes are legal. It sits in core,
below jobs and runs, because both name these states (a job shows its current run's state, see
app/jobs/schemas.py::JobState); only ``runs.service.transition`` applies them. A plain constants
module that imports nothing."""

from __future__ import annotations

from typing import Literal, get_args

# A pre-warmed run: its driver starts (JVM, session, Python) while the run it replaces still
# processes, then waits for go before touching a checkpoint (app/worker/standby/standby.py).
STANDBY = "standby"
SUBMITTING = "submitting"
RUNNING = "running"
STOPPING = "stopping"
DRAINING = "draining"
RESTARTING = "restarting"
STOPPED = "stopped"
CANCELLED = "cancelled"
DRAINED = "drained"
SUCCEEDED = "succeeded"
FAILED = "failed"

# The same names as a type, in this order (what the API's schemas list).
RunState = Literal[
    "standby",
    "submitting",
    "running",
    "stopping",
    "draining",
    "restarting",
    "stopped",
    "cancelled",
    "drained",
    "succeeded",
    "failed",
]

ACTIVE = frozenset({STANDBY, SUBMITTING, RUNNING, STOPPING, DRAINING, RESTARTING})
TERMINAL = frozenset({STOPPED, CANCELLED, DRAINED, SUCCEEDED, FAILED})
assert set(get_args(RunState)) == ACTIVE | TERMINAL  # one list, spelt twice here only
# States in which a Spark application of this run may exist and must be watched.
ON_BACKEND = frozenset({STANDBY, SUBMITTING, RUNNING, STOPPING, DRAINING})

ALLOWED: dict[str, frozenset[str]] = {
    # go (the run it replaces has ended); released unused; its driver ended before go.
    STANDBY: frozenset({RUNNING, STOPPING, FAILED}),
    SUBMITTING: frozenset({RUNNING, RESTARTING, FAILED, STOPPING, SUCCEEDED}),
    RUNNING: frozenset({STOPPING, DRAINING, RESTARTING, FAILED, SUCCEEDED}),
    # DRAINED: a drain stopped for its timeout after its marker went out finishes draining.
    # SUBMITTING: stopped for a restart with a spare, which takes over as the next attempt.
    STOPPING: frozenset({STOPPED, CANCELLED, FAILED, DRAINED, SUBMITTING}),
    DRAINING: frozenset({DRAINED, STOPPING, FAILED, STOPPED}),
    RESTARTING: frozenset({SUBMITTING, STOPPED, CANCELLED, FAILED}),
    # A person may restart a run that ended: from its own checkpoint, as a new attempt.
    STOPPED: frozenset({SUBMITTING}),
    CANCELLED: frozenset({SUBMITTING}),
    DRAINED: frozenset(),
    SUCCEEDED: frozenset({SUBMITTING}),
    FAILED: frozenset({SUBMITTING}),
}
