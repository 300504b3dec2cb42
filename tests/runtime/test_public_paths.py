"""The stable public paths a pipeline imports (``tidegate_runtime.control``, ``source``,
``eventlog``, ``produce``) re-export the names pipelines and the documents use from the parts
that hold them (tidegate_runtime/driver/, sources/), and nothing else: the example pipelines
and the test apps import the runtime through them alone."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = {
    "control": ("driver.runtime", {"Runtime"}),
    "source": (
        "sources.eventlog_source",
        {"read_events", "with_event_time", "without_drain_marker", "DRAIN_MARKER_TIMESTAMP"},
    ),
    "eventlog": ("sources.eventlog", {"EventLog", "NewRecord", "Record"}),
    "produce": ("sources.eventlog_producer", {"produce", "append_pairs"}),
}
PIPELINES = [
    *sorted((ROOT / "pipelines").glob("*.py")),
    *sorted((ROOT / "tests" / "support" / "apps").glob("*.py")),
]


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_a_public_path_is_its_home_s_names(name: str) -> None:
    home, names = PUBLIC[name]
    public = importlib.import_module(f"tidegate_runtime.{name}")
    code = importlib.import_module(f"tidegate_runtime.{home}")
    assert set(public.__all__) == names
    assert all(getattr(public, n) is getattr(code, n) for n in names)
    assert "stable public path" in (public.__doc__ or "")


def test_pipelines_import_the_runtime_through_its_public_paths_only() -> None:
    wrong = []
    for path in PIPELINES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tidegate_"):
                public = (node.module or "").removeprefix("tidegate_runtime.")
                given = PUBLIC.get(public, ("", set()))[1]
                unknown = {a.name for a in node.names} - given
                if unknown:
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.module} {unknown}")
            elif isinstance(node, ast.Import):
                wrong += [
                    f"{path.relative_to(ROOT)}:{node.lineno}: import {a.name}"
                    for a in node.names
                    if a.name.startswith("tidegate_")
                ]
    assert len(PIPELINES) > 10
    assert not wrong, wrong
