"""The contract between the control plane and the driver is written once
(tidegate_runtime/contract.py): no other module spells a ``spark.tidegate.*`` key or renames a
contract name, the worker's supervisor and the runtime's per-query supervisor wait by the one
backoff formula, and the runtime channel's shapes are the API's models, field for field, at
the contract's paths."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

from app.channel import routes as channel_routes
from app.jobs.schemas import RestartPolicy as JobRestartPolicy
from app.runs import schemas as run_schemas
from app.runs.policy import RestartPolicy
from app.startpoints.schemas import AppliedReport
from tidegate_runtime import contract
from tidegate_runtime.driver.channel import progress_report
from tidegate_runtime.driver.restart_policy import RestartPolicy as QueryRestartPolicy

ROOT = Path(__file__).resolve().parents[2]
KEY = re.compile(r"""["']spark\.tidegate\.""")


def test_no_module_but_the_contract_spells_a_conf_key() -> None:
    spelled = [
        f"{path.relative_to(ROOT)}:{n}"
        for folder in ("app", "tidegate_runtime", "bench")  # pipelines/ are a team's own files
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.name != "contract.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if KEY.search(line) and not line.lstrip().startswith("#")
    ]
    assert not spelled, spelled


class _Fixed(random.Random):
    def random(self) -> float:
        return 0.5


def test_both_supervisors_wait_by_the_one_formula() -> None:
    assert contract.backoff_seconds(1, 60, 0.2, 0, _Fixed()) == 1.1
    assert contract.backoff_seconds(1, 60, 0.2, 3, _Fixed()) == 8 * 1.1
    assert contract.backoff_seconds(1, 60, 0.2, 500, _Fixed()) == 60 * 1.1  # capped, no overflow
    policy = {"min_backoff": "2s", "max_backoff": "30s", "random_factor": 0}
    run_level = RestartPolicy.from_json(policy)
    seconds = {"min_backoff_seconds": 2, "max_backoff_seconds": 30, "stable_period_seconds": 60}
    query_level = QueryRestartPolicy.from_directives(seconds)
    for nth in range(8):  # the worker counts failures from 0, the runtime restarts from 1
        assert run_level.delay(nth).total_seconds() == query_level.backoff(nth + 1)


# ---- the runtime channel: one shape for each side ---------------------------------------------

# The API's model of each shape in the contract: what the driver reads (answers) and what it
# posts (reports), and the shapes nested in them.
ANSWERS = {
    contract.Directives: run_schemas.Directives,
    contract.StandbyAnswer: run_schemas.StandbyAnswer,
}
REPORTS = {
    contract.ProgressReport: run_schemas.ProgressReport,
    contract.SourceProgress: run_schemas.SourceProgress,
    contract.StateOperatorProgress: run_schemas.StateOperatorProgress,
    contract.DrainReport: run_schemas.DrainReport,
    contract.FenceReport: run_schemas.FenceReport,
    contract.QueryFailureReport: run_schemas.QueryFailureReport,
    contract.AppliedReport: AppliedReport,
}


@pytest.mark.parametrize("shape", [*ANSWERS, *REPORTS], ids=lambda s: s.__name__)
def test_the_api_s_model_has_the_contract_s_fields(shape: Any) -> None:
    model = {**ANSWERS, **REPORTS}[shape]
    assert set(model.model_fields) == set(shape.__annotations__), model.__name__


@pytest.mark.parametrize("shape", list(REPORTS), ids=lambda s: s.__name__)
def test_a_report_leaves_out_only_what_the_api_defaults(shape: Any) -> None:
    """A key the contract lets the driver leave out is one the API defaults, and only those."""
    model = REPORTS[shape]
    required = {name for name, f in model.model_fields.items() if f.is_required()}
    assert required == set(shape.__required_keys__), model.__name__


def test_what_the_api_answers_is_the_contract_s_shape() -> None:
    """Every key of an answer is always sent (the driver reads them without a default)."""
    directives = run_schemas.Directives(run_id=1, attempt=0, state="running", stop=False)
    assert set(directives.model_dump()) == contract.Directives.__required_keys__
    answer = run_schemas.StandbyAnswer(run_id=1, attempt=0, state="standby", go=True, stop=False)
    assert set(answer.model_dump()) == contract.StandbyAnswer.__required_keys__
    policy = JobRestartPolicy.model_validate({"min_backoff": "2s", "max_backoff": "30s"})
    assert set(policy.in_seconds()) == set(contract.QueryRestartPolicy.__annotations__)


def test_the_driver_s_reports_are_what_the_api_takes() -> None:
    """What the runtime builds is accepted as the API's body, field for field."""
    progress = progress_report(
        "q",
        {
            "batchId": 3,
            "numInputRows": 5,
            "sources": [{"description": "eventlog", "startOffset": '{"0": 1}'}],
            "stateOperators": [{"operatorName": "stateStoreSave", "customMetrics": {"x": 1}}],
            "durationMs": {"addBatch": 7},
            "sink": {"description": "FileSink[/out]"},
        },
    )
    body = run_schemas.ProgressReport.model_validate(progress)
    assert body.model_dump(exclude={"idle"}, exclude_unset=True).keys() == progress.keys()
    idle: contract.ProgressReport = {"query": "q", "batch_id": 3, "idle": True}
    assert run_schemas.ProgressReport.model_validate(idle).idle


def test_the_channel_s_paths_are_the_contract_s() -> None:
    """The API serves each endpoint the driver's client calls, at the contract's path."""
    served = {getattr(r, "path", "") for r in channel_routes.router.routes}
    paths = [
        contract.TOKEN_PATH,
        contract.DIRECTIVES_PATH,
        contract.STANDBY_PATH,
        contract.PROGRESS_PATH,
        contract.STARTPOINTS_APPLIED_PATH,
        contract.DRAIN_PATH,
        contract.FENCED_PATH,
        contract.QUERY_FAILURES_PATH,
    ]
    assert {contract.RUN_CHANNEL + p for p in paths} <= served
    named = {v for k, v in vars(contract).items() if k.endswith("_PATH")}
    assert named == set(paths)


def test_no_module_aliases_a_contract_name() -> None:
    """A contract name under a second name (``STANDBY_CONF = contract.STANDBY``) is one fact
    written twice: each side reads ``contract.*`` itself."""
    alias = re.compile(r"^\w+\s*=\s*contract\.[A-Z_]+\s*$")
    aliased = [
        f"{path.relative_to(ROOT)}:{n}"
        for folder in ("app", "tidegate_runtime", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if alias.match(line)
    ]
    assert not aliased, aliased
