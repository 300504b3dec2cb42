"""The documents cite the code by path (``app/worker/kinds/update.py``) and by name
(``app/worker/kinds/update.py::do_update``, ``Class.method``): every citation in README.md and
docs/*.md names a file that exists and, for Python, a definition in it (a function, a class,
a module-level name; dotted for a member). A rename or a move that forgets a document fails
here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CITATION = re.compile(
    r"((?:app|tidegate_runtime|tests|bench|pipelines|scripts|docker|migrations|openapi)"
    r"/[\w/.\-]+\.(?:py|md|yml|yaml|sh|json|toml|ini|html|txt))(?:::([A-Za-z_][\w.]*))?"
)


def _defines(body: list[ast.stmt], name: str) -> list[ast.stmt] | None:
    """The body of ``name`` defined in ``body`` ([] for a plain name), or None."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                return node.body
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return []
    return None


def citations() -> list[tuple[str, str, str | None]]:
    found = []
    for document in DOCUMENTS:
        for match in CITATION.finditer(document.read_text()):
            found.append((document.relative_to(ROOT).as_posix(), match.group(1), match.group(2)))
    return found


def missing(cited: list[tuple[str, str, str | None]]) -> list[str]:
    wrong = []
    for document, path, name in cited:
        file = ROOT / path
        if not file.exists():
            wrong.append(f"{document}: {path} does not exist")
            continue
        if name is None or file.suffix != ".py":
            continue
        body: list[ast.stmt] | None = ast.parse(file.read_text()).body
        for part in name.rstrip(".").split("."):
            body = _defines(body or [], part)
            if body is None:
                wrong.append(f"{document}: {path} defines no {name}")
                break
    return sorted(set(wrong))


def test_every_citation_of_the_code_in_the_documents_exists() -> None:
    cited = citations()
    assert len(cited) > 100, "the citation pattern no longer finds the documents' citations"
    assert missing(cited) == []


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("app/worker/kinds/update.py", "do_nothing"),
        ("app/worker/kinds/gone.py", None),
        ("app/worker/core/steps.py", "Steps.vanished"),
    ],
)
def test_a_citation_that_no_longer_holds_is_named(path: str, name: str | None) -> None:
    assert missing([("docs/x.md", path, name)]) != []
    assert missing([("docs/x.md", "app/worker/core/steps.py", "Steps.run")]) == []


def test_the_architecture_names_every_module_of_app_core() -> None:
    """docs/architecture.md's first layer lists what app/core holds: a module added there and
    not said is a claim gone stale (issue 54: 6 of 20 were missing)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    layer = text[text.index("1. `app/core/`") : text.index("2. `app/backends/`")]
    modules = sorted(p.name for p in (ROOT / "app" / "core").glob("*.py") if p.stem != "__init__")
    unsaid = [m for m in modules if f"`{m}`" not in layer]
    assert not unsaid, f"app/core modules docs/architecture.md does not name: {unsaid}"


def test_the_architecture_names_every_part_of_the_runtime() -> None:
    """docs/architecture.md's section on the runtime names each of its parts (a folder of
    tidegate_runtime/), every module in each, and the stable public paths beside them: a part
    or a module added and not said is a claim gone stale."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    start = text.index("## The runtime's parts")
    section = text[start : text.index("\n## ", start)]
    runtime = ROOT / "tidegate_runtime"
    parts = sorted(p.name for p in runtime.iterdir() if (p / "__init__.py").exists())
    assert len(parts) >= 4, parts
    unsaid = [f"{part}/" for part in parts if f"`{part}/`" not in section]
    unsaid += [
        f"{path.parent.name}/{path.name}"
        for part in parts
        for path in sorted((runtime / part).glob("*.py"))
        if path.stem != "__init__" and not re.search(rf"`{re.escape(path.name)}[`:]", section)
    ]
    unsaid += [
        path.name
        for path in sorted(runtime.glob("*.py"))
        if path.stem != "__init__" and f"{path.name}`" not in section
    ]
    assert not unsaid, f"parts of tidegate_runtime docs/architecture.md does not name: {unsaid}"
