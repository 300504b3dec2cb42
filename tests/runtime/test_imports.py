"""tidegate_runtime runs inside Spark drivers and executors: it may import only the stdlib,
pyspark and pyarrow, and kafka-python (``kafka``), which the runtime zip carries with it
(app/worker/core/runtime_bundle.py; tests/worker/test_runtime_bundle.py imports it from there).
And its parts import only the parts below them: the contract < checkpoints/ < sources/ <
driver/ < the stable public paths beside them; packaging/ stands alone."""

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
    assert (
        _allowed("json")
        and _allowed("pyspark.sql")
        and _allowed("tidegate_runtime.sources.eventlog")
    )
    assert not _allowed("typer") and not _allowed("app.core.db") and not _allowed("app")


# Each part of the runtime, bottom up: a module may import its own part and the parts below.
PARTS = ("contract", "checkpoints", "sources", "driver")
PUBLIC = ("control", "source", "eventlog", "produce")  # the stable paths pipelines import


def _part(module: str) -> str | None:
    """The part ``tidegate_runtime.X...`` belongs to (X), None outside the runtime."""
    names = module.split(".")
    return names[1] if names[0] == "tidegate_runtime" and len(names) > 1 else None


def _below(importer: str, imported: str) -> bool:
    if importer == imported or imported == "__init__":
        return True
    if importer == "packaging" or imported == "packaging":
        return False  # it stands alone: Spark's zips need nothing of the runtime
    if importer in PUBLIC:
        return imported in PARTS
    return importer in PARTS and imported in PARTS and PARTS.index(imported) < PARTS.index(importer)


def test_the_runtime_has_its_parts_and_nothing_loose() -> None:
    folders = sorted(p.name for p in RUNTIME.iterdir() if (p / "__init__.py").exists())
    assert folders == ["checkpoints", "driver", "packaging", "sources"]
    loose = sorted(p.stem for p in RUNTIME.glob("*.py") if p.stem != "__init__")
    assert loose == sorted(("contract", *PUBLIC)), loose


def test_each_part_imports_only_the_parts_below_it() -> None:
    bad = []
    for path in sorted(RUNTIME.rglob("*.py")):
        rel = path.relative_to(RUNTIME)
        importer = rel.parts[0].removesuffix(".py")
        for line, module in _imports(path):
            imported = _part(module)
            if imported is not None and not _below(importer, imported):
                bad.append(f"{rel}:{line}: {module}")
    assert not bad, "a part of tidegate_runtime imports one above it:\n" + "\n".join(bad)


def test_the_part_rule_catches_an_upward_import() -> None:
    assert _below("driver", "sources") and _below("sources", "checkpoints")
    assert not _below("checkpoints", "sources") and not _below("sources", "driver")
    assert not _below("contract", "driver") and not _below("packaging", "contract")
    assert _below("control", "driver") and not _below("driver", "control")
