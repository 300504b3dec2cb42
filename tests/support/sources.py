"""The test modules as parsed source, for the checks in tests/repo that read the tests
themselves (which test needs Spark, which scenario runs on which backend)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def parsed_test_modules() -> Iterator[tuple[Path, ast.Module]]:
    """Every ``tests/<domain>/test_*.py`` (support holds none), with its syntax tree."""
    for path in sorted(TESTS.glob("*/test_*.py")):
        if path.parent.name != "support":
            yield path, ast.parse(path.read_text(encoding="utf-8"))
