"""The dry run's pieces without Spark: planning the empty batch in a scratch copy, reading
Spark's errors, and saying which query, operator and state differ. (On real Spark:
tests/snapshots/test_snapshots_e2e.py.)"""

from __future__ import annotations

import json
from pathlib import Path

from app.worker.dry_run.scratch_copy import TRIAL_RECORDS, plan_empty_batch, plan_trial
from app.worker.dry_run.verdict import infrastructure_error, problems
from tidegate_runtime.checkpoints.checkpoint import hadoop_crc, latest_offsets_batch
from tidegate_runtime.driver.dry_run import describe_error

VALUE_ERROR = (
    "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: "
    "[STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE] Provided value schema does not match existing "
    "state value schema.\nPlease check number and type of fields.\nExisting value_schema="
    "StructType(StructField(count,LongType,true),StructField(sum,DoubleType,true)) and new "
    "value_schema=StructType(StructField(count,LongType,true),StructField(sum,DoubleType,true),"
    "StructField(count,LongType,true)).\nIf you want to force running the query without schema "
    "validation, please set spark.sql.streaming.stateStore.stateSchemaCheck to false. "
    "SQLSTATE: XXKST\n=== Streaming Query ===\nIdentifier: windowed_counts"
)
OPERATOR_ERROR = (
    "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: "
    "[STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA] Streaming stateful operator name "
    "does not match with the operator in state metadata.\nStateful operators in the metadata: "
    "[(OperatorId: 0 -> OperatorName: stateStoreSave)]; Stateful operators in current batch: "
    "[(OperatorId: 0 -> OperatorName: sessionWindowStateStoreSaveExec)]. SQLSTATE: 42K03"
)


def _checkpoint(root: Path, batches: int, state: bool) -> Path:
    for log in ("offsets", "commits"):
        (root / log).mkdir(parents=True)
    for n in range(batches):
        meta = json.dumps({"batchWatermarkMs": n, "batchTimestampMs": n, "conf": {}})
        (root / "offsets" / str(n)).write_text(f'v1\n{meta}\n{{"0": {10 * (n + 1)}}}')
        (root / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    if state:
        (root / "state" / "0" / "0").mkdir(parents=True)
        (root / "state" / "0" / "0" / f"{batches}.delta").write_bytes(b"x")
    return root


def test_the_empty_batch_repeats_the_committed_offsets(tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path / "q", 3, state=True)
    assert plan_empty_batch(checkpoint) == 3
    planned = (checkpoint / "offsets" / "3").read_bytes()
    assert planned == (checkpoint / "offsets" / "2").read_bytes()
    assert (checkpoint / "offsets" / ".3.crc").read_bytes() == hadoop_crc(planned)
    assert latest_offsets_batch(checkpoint) == 3
    assert not (checkpoint / "commits" / "3").exists()


def test_no_state_nothing_to_check(tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path / "q", 2, state=False)
    assert plan_empty_batch(checkpoint) is None
    assert latest_offsets_batch(checkpoint) == 1


def test_sparks_error_class_is_the_cause_not_the_wrapper() -> None:
    described = describe_error(RuntimeError(VALUE_ERROR))
    assert described["error_class"] == "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE"
    assert described["message"].startswith("Provided value schema")
    assert "=== Streaming Query ===" not in described["message"]
    assert "SQLSTATE" not in described["message"]
    plain = describe_error(ValueError("no class here"))
    assert plain == {"ok": False, "error_class": "ValueError", "message": "no class here"}


def test_problems_name_query_operator_and_what_differs() -> None:
    outcome = {
        "ok": False,
        "queries": {
            "counts": describe_error(RuntimeError(VALUE_ERROR)),
            "sessions": describe_error(RuntimeError(OPERATOR_ERROR)),
            "fine": {"ok": True, "batch_id": 4},
        },
    }
    lines = problems(outcome, {"counts": [{"id": 0, "name": "stateStoreSave"}]})
    assert lines == [
        "query 'counts': the state value schema of operator 0 (stateStoreSave) changed: saved "
        "StructType(StructField(count,LongType,true),StructField(sum,DoubleType,true)), new "
        "StructType(StructField(count,LongType,true),StructField(sum,DoubleType,true),"
        "StructField(count,LongType,true)) [STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE]",
        "query 'sessions': operator 0 is stateStoreSave in the saved state but "
        "sessionWindowStateStoreSaveExec in the new version "
        "[STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA]",
    ]
    timeout = {"ok": False, "timeout": True, "message": "did not finish within 300s"}
    assert problems(timeout, {}) == ["did not finish within 300s"]


def _failed(*errors: tuple[str, str]) -> dict[str, object]:
    return {
        "ok": False,
        "queries": {
            f"q{n}": {"ok": False, "error_class": error_class, "message": message}
            for n, (error_class, message) in enumerate(errors)
        },
    }


CONNECT_BACK = ("StreamingQueryException", "Python worker failed to connect back.\n\tat x.y(Z)")


def test_transient_spark_failures_are_infrastructure_not_refusals() -> None:
    assert infrastructure_error(_failed(CONNECT_BACK)) == "Python worker failed to connect back."
    crashed = ("SparkException", "Job aborted.\nPython worker exited unexpectedly (crashed)")
    assert infrastructure_error(_failed(crashed)) == "Python worker exited unexpectedly (crashed)"
    reset = ("IOException", "Connection reset by peer")
    assert infrastructure_error(_failed(reset)) == "Connection reset by peer"
    # The other queries did not get to run because of it.
    not_started = ("QUERY_NOT_STARTED", "the app did not start query 'b' in its dry run")
    assert infrastructure_error(_failed(CONNECT_BACK, not_started))
    # A driver that crashed without writing its result, its own words saying why.
    crashed_driver = {
        "ok": False,
        "driver": "FAILED",
        "message": "the new version's app ended without a dry-run result (FAILED); does it "
        "start its queries with the tidegate runtime?\njava.net.ConnectException: "
        "Connection refused",
    }
    assert infrastructure_error(crashed_driver) == "java.net.ConnectException: Connection refused"


def test_state_and_app_errors_stay_refusals() -> None:
    value = describe_error(Exception(VALUE_ERROR))
    operator = describe_error(Exception(OPERATOR_ERROR))
    assert infrastructure_error(_failed((value["error_class"], value["message"]))) is None
    assert infrastructure_error(_failed((operator["error_class"], operator["message"]))) is None
    # A state incompatibility next to a transient failure is still a refusal.
    assert infrastructure_error(_failed(CONNECT_BACK, (operator["error_class"], "x"))) is None
    # Any other error of the app, alone or next to a transient one.
    unresolved = ("UNRESOLVED_COLUMN.WITH_SUGGESTION", "A column `x` cannot be resolved.")
    assert infrastructure_error(_failed(unresolved)) is None
    assert infrastructure_error(_failed(CONNECT_BACK, unresolved)) is None
    assert infrastructure_error(_failed(("QUERY_NOT_STARTED", "not started"))) is None
    no_runtime = {"ok": False, "message": "the new version's app ended without a dry-run result"}
    assert infrastructure_error(no_runtime) is None
    timeout = {"ok": False, "timeout": True, "message": "Connection refused, did not finish"}
    assert infrastructure_error(timeout) is None
    assert infrastructure_error({"ok": True, "queries": {}}) is None


TRIAL_ERROR = (
    "An exception was thrown from the Python worker: Traceback (most recent call last):\n"
    '  File "/opt/jobs/clicks.py", line 72, in parse\n'
    '    raise ValueError(f"cannot parse amount {raw}")\n'
    "ValueError: cannot parse amount 12,5\n"
)


def test_a_trial_s_python_error_is_said_by_its_own_line() -> None:
    """A fresh version's trial fails in the app's own code: the refusal quotes the error the
    code raised, not the traceback's header."""
    outcome = {
        "ok": False,
        "queries": {
            "counts": {"ok": False, "error_class": "PYTHON_EXCEPTION", "message": TRIAL_ERROR}
        },
    }
    assert problems(outcome, {}) == [
        "query 'counts': ValueError: cannot parse amount 12,5 [PYTHON_EXCEPTION]"
    ]
    assert infrastructure_error(outcome) is None


def test_a_trial_reads_the_last_records_of_event_log_sources_only() -> None:
    queries = [
        {"name": "counts", "sources": [{"name": "clicks", "kind": "eventlog"}]},
        {
            "name": "joined",
            "sources": [{"name": "clicks", "kind": "eventlog"}, {"name": "files", "kind": "file"}],
        },
        {"name": "renamed", "sources": [{"name": "taps", "kind": "eventlog"}]},
        {"name": "idle", "sources": [{"name": "views", "kind": "eventlog"}]},
    ]
    positions = {"clicks": {"0": 1000, "1": 50}, "views": {"0": 0}}
    trial = plan_trial(queries, positions)
    # A file source has no cap; a source the old run did not read has no position; a log
    # with nothing committed has nothing to read: none of those gets a trial.
    assert trial == {
        "counts": {
            "clicks": {
                "start": {"0": 1000 - TRIAL_RECORDS, "1": 0},
                "end": {"0": 1000, "1": 50},
            }
        }
    }
