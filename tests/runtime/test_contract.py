"""The contract between the control plane and the driver is written once
(tidegate_runtime/contract.py): no other module spells a ``spark.tidegate.*`` key, and the
worker's supervisor and the runtime's per-query supervisor wait by the one backoff formula."""

from __future__ import annotations

import random
import re
from pathlib import Path

from app.runs.policy import RestartPolicy
from tidegate_runtime import contract
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
