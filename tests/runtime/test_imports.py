"""tidegate_runtime runs inside Spark drivers and executors: it may import only the stdlib,
pyspark and pyarrow, and kafka-python (``kafka``), which the runtime zip carries with it
(app/worker/core/runtime_bundle.py; tests/worker/test_runtime_bundle.py imports it from there)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import tidegate_runtime

RUNTIME = Path(tidegate_runtime.__file__).parent
ALLOWED_THIRD_PARTY = {"pyspark", "pyarrow", "kafka"}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import of a module, relative ones resolved."""
    package = ".".join(path.relative_to(RUNTIME.parent).parent.parts)
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((node.lineno, module))
    return found


def _allowed(module: str) -> bool:
    top = module.split(".")[0]
    if top == "tidegate_runtime":
        return True
    return top in sys.stdlib_module_names or top in ALLOWED_THIRD_PARTY


def test_runtime_imports_only_stdlib_pyspark_pyarrow_and_the_kafka_it_ships() -> None:
    modules = sorted(RUNTIME.rglob("*.py"))
    assert len(modules) >= 5
    bad = [
        f"{path.relative_to(RUNTIME.parent)}:{line}: {module}"
        for path in modules
        for line, module in _imports(path)
        if not _allowed(module)
    ]
    assert not bad, "forbidden imports in tidegate_runtime:\n" + "\n".join(bad)


def test_the_rule_catches_violations() -> None:
    assert _allowed("json") and _allowed("pyspark.sql") and _allowed("tidegate_runtime.eventlog")
    assert not _allowed("typer") and not _allowed("app.core.db") and not _allowed("app")
