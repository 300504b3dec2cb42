"""CI runs each two-backend end-to-end scenario on the one backend ``CI_BACKEND`` names
(tests/support/backends.py): a name that no longer matches a scenario would quietly put it back
on both, and CI over its time."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.sources import parsed_test_modules

TESTS = Path(__file__).resolve().parents[1]
SUPPORT = TESTS / "support"


def _ci_backend() -> dict[str, str]:
    tree = ast.parse((SUPPORT / "backends.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "CI_BACKEND" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            assert isinstance(value, dict)
            return value
    raise AssertionError("tests/support/backends.py has no CI_BACKEND")


def _scenarios() -> set[str]:
    """Test functions that take the ``target`` fixture: the two-backend scenarios."""
    out = set()
    for _, module in parsed_test_modules():
        for node in module.body:
            if (
                isinstance(node, ast.FunctionDef)
                and node.name.startswith("test_")
                and any(arg.arg == "target" for arg in node.args.args)
            ):
                out.add(node.name)
    return out


def test_every_name_in_ci_backend_is_a_two_backend_scenario_and_both_get_some() -> None:
    chosen, scenarios = _ci_backend(), _scenarios()
    assert set(chosen) <= scenarios, set(chosen) - scenarios
    assert set(chosen.values()) <= {"runner", "standalone"}
    per_backend = [list(chosen.values()).count(b) for b in ("runner", "standalone")]
    assert min(per_backend) >= 2, chosen  # every push runs scenarios on both
