"""Tests live by domain, as app/ does, and the kind of a test is a marker (docs/architecture.md,
"Tests"): a folder of tests/ is a domain, tests/support holds no test, and a test module that
asks for real Spark says so with its marker, so that ``-m "not (e2e or spark or chaos)"``
is the fast set it claims to be."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.sources import parsed_test_modules

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
# Beside app/'s own folders: the runtime (tidegate_runtime/), the example pipelines, and the
# repository's own rules; support holds the shared fixtures and helpers.
OTHER_DOMAINS = {"runtime", "pipelines", "repo", "support"}
# Fixtures that start or use a real Spark (the session's standalone cluster and local runner,
# the e2e stack on them, a chaos stack) or a local SparkSession.
E2E_FIXTURES = {
    "standalone_cluster",
    "livy_runner",
    "stack",
    "clusters",
    "runner",
    "target",
    "chaos",
    "cluster_python",
    "team_pipelines",
}
SPARK_FIXTURES = {"spark"}


def _domains() -> set[str]:
    """app/'s folders and modules."""
    app = ROOT / "app"
    return {p.stem for p in app.iterdir() if (p / "__init__.py").exists() or p.suffix == ".py"}


def _marks(items: list[ast.expr]) -> set[str]:
    """``x`` of each ``pytest.mark.x`` (called or not) among ``items``."""
    out = set()
    for item in items:
        node = item.func if isinstance(item, ast.Call) else item
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "mark"
        ):
            out.add(node.attr)
    return out


def _module_marks(tree: ast.Module) -> set[str]:
    """The marks of ``pytestmark = pytest.mark.x`` or ``[pytest.mark.x, ...]``."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            value = node.value
            return _marks(list(value.elts) if isinstance(value, ast.List | ast.Tuple) else [value])
    return set()


def _unmarked(tree: ast.Module) -> list[str]:
    """The tests of a module that ask for real Spark (directly or through a fixture of the
    module's own) without the marker that says so."""
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    own = {
        f.name: {a.arg for a in f.args.args} for f in functions if not f.name.startswith("test_")
    }
    module_marks = _module_marks(tree)
    out = []
    for test in (f for f in functions if f.name.startswith("test_")):
        asked = {a.arg for a in test.args.args}
        asked |= {name for fixture in asked & own.keys() for name in own[fixture]}
        asked -= own.keys()  # a fixture of the module's own shadows a shared one
        marks = module_marks | _marks(test.decorator_list)
        if asked & E2E_FIXTURES and "e2e" not in marks:
            out.append(f"{test.name} (e2e)")
        elif asked & SPARK_FIXTURES and not marks & {"spark", "e2e"}:
            out.append(f"{test.name} (spark)")
    return out


def test_every_folder_of_tests_is_a_domain() -> None:
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    strays = folders - _domains() - OTHER_DOMAINS
    assert not strays, f"folders of tests/ that are no folder of app/: {sorted(strays)}"


def test_every_folder_of_app_with_code_has_its_tests() -> None:
    """A newcomer looks for a domain's tests in the folder of its name (app/tokens' routes are
    tested with the tokens they serve, in tests/auth)."""
    app = ROOT / "app"
    folders = {p.name for p in app.iterdir() if (p / "__init__.py").exists()}
    tested_elsewhere = {"tokens": "auth"}
    missing = {f for f in folders - set(tested_elsewhere) if not (TESTS / f).is_dir()}
    assert not missing, f"folders of app/ with no folder in tests/: {sorted(missing)}"


def test_support_holds_no_test() -> None:
    assert not list((TESTS / "support").rglob("test_*.py"))


def test_a_test_that_needs_spark_carries_its_marker() -> None:
    unmarked = [
        f"{path.relative_to(ROOT)}::{name}"
        for path, module in parsed_test_modules()
        for name in _unmarked(module)
    ]
    assert not unmarked, unmarked


def test_the_marker_check_sees_a_missing_marker() -> None:
    bare = "import pytest\n\ndef test_x(livy_runner: str) -> None:\n    pass\n"
    assert _unmarked(ast.parse(bare)) == ["test_x (e2e)"]
    through = (
        "import pytest\n\n@pytest.fixture\ndef job(target: str) -> str:\n    return target\n\n"
        "@pytest.mark.e2e\ndef test_y(job: str) -> None:\n    pass\n\n"
        "def test_z(job: str, spark: object) -> None:\n    pass\n"
    )
    assert _unmarked(ast.parse(through)) == ["test_z (e2e)"]
    marked = "import pytest\npytestmark = [pytest.mark.chaos, pytest.mark.e2e]\n" + bare
    assert _unmarked(ast.parse(marked)) == []
