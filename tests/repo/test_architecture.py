"""The import structure of app/: no circles between modules or between folders, and developer
tooling stays out of what runs in production.

Every ``import`` in every module counts, function-level ones too; only imports under
``if TYPE_CHECKING:`` (annotations) are left out.
"""

from __future__ import annotations

import ast
import functools
import itertools
from collections.abc import Iterable
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"

# Edges that still close a circle, each for a named reason. Remove an entry once its reason is
# gone; the test fails on an entry that no longer exists, so the list cannot go stale.
#
# The layers, bottom up: core < backends < auth < audit < clusters < jobs < runs < startpoints
# < channel < snapshots < resume_points < operations < tokens, metrics, ui < worker < api < cli.
KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {}

# What runs in production must not need developer tooling (app.devtools).
# (tidegate_runtime is its own package: tests/runtime/test_imports.py keeps it free of app.)
PRODUCTION = ("app.api", "app.worker", "app.core")


def _module_name(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in APP.rglob("*.py")}


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes inside ``if TYPE_CHECKING:`` blocks."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                skip.update(id(n) for body in node.body for n in ast.walk(body))
    return skip


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterable[tuple[str, int]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    skip = _type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "app":
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != "app":
                continue
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                yield (sub if sub in modules else source), node.lineno


@functools.cache
def _graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], int]]:
    modules = _modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    where: dict[tuple[str, str], int] = {}
    for name, path in modules.items():
        for target, line in _imports(name, path, modules):
            while target not in modules and "." in target:
                target = target.rpartition(".")[0]  # an attribute of a module
            if target != name and target in modules:
                edges[name].add(target)
                where.setdefault((name, target), line)
    return edges, where


def _folder(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and (APP / parts[1]).is_dir()):
        return "app." + parts[1]
    return "app"  # app/__init__.py, app/cli.py, app/models.py: the top


def _cycles(edges: dict[str, set[str]]) -> list[tuple[list[str], list[str]]]:
    """For each strongly connected component with more than one node: one circle through it,
    and all its nodes."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(edges):
        if v not in index:
            connect(v)
    circles = []
    for component in components:
        start = min(component)
        # shortest way back to start inside the component (breadth first)
        paths = {start: [start]}
        queue = [start]
        found = None
        while queue and found is None:
            v = queue.pop(0)
            for w in sorted(edges[v]):
                if w == start:
                    found = paths[v] + [start]
                    break
                if w in component and w not in paths:
                    paths[w] = paths[v] + [w]
                    queue.append(w)
        circles.append((found or sorted(component), sorted(component)))
    return circles


def _without_exceptions(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    return {a: {b for b in bs if (a, b) not in KNOWN_EXCEPTIONS} for a, bs in edges.items()}


def _show(circle: list[str], where: dict[tuple[str, str], int]) -> str:
    return "\n    ".join(
        f"{a} -> {b}" + (f"  (line {where[(a, b)]})" if (a, b) in where else "")
        for a, b in itertools.pairwise(circle)
    )


def test_known_exceptions_are_real_edges() -> None:
    edges, _ = _graph()
    stale = [edge for edge in KNOWN_EXCEPTIONS if edge[1] not in edges.get(edge[0], set())]
    assert not stale, f"known exceptions that no longer exist (remove them): {stale}"


def test_no_circle_between_modules() -> None:
    edges, where = _graph()
    circles = _cycles(_without_exceptions(edges))
    assert not circles, "import circles between modules:\n" + "\n".join(
        f"  among {members}:\n    " + _show(c, where) for c, members in circles
    )


def test_no_circle_between_folders() -> None:
    edges, where = _graph()
    folders: dict[str, set[str]] = {}
    witness: dict[tuple[str, str], str] = {}
    for a, targets in _without_exceptions(edges).items():
        for b in targets:
            fa, fb = _folder(a), _folder(b)
            folders.setdefault(fa, set())
            folders.setdefault(fb, set())
            if fa != fb:
                folders[fa].add(fb)
                witness.setdefault((fa, fb), f"{a}:{where[(a, b)]} -> {b}")
    circles = _cycles(folders)
    assert not circles, "import circles between folders:\n" + "\n".join(
        f"  among {members}: "
        + " -> ".join(c)
        + "\n    "
        + "\n    ".join(witness[(a, b)] for a, b in itertools.pairwise(c))
        for c, members in circles
    )


# The worker's rooms, bottom up: core < dry_run < reconcile < runs < standby < kinds < the
# process (app/worker/*.py: cli, loop, execute). A room imports only rooms below it.
WORKER_ROOMS = ["core", "dry_run", "reconcile", "runs", "standby", "kinds", ""]


def _worker_room(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["app", "worker"] or len(parts) < 3:
        return None
    return parts[2] if len(parts) > 3 else ""


def test_the_worker_s_rooms_import_only_rooms_below_them() -> None:
    edges, where = _graph()
    rooms = {r for m in edges if (r := _worker_room(m)) is not None}
    assert rooms == set(WORKER_ROOMS), f"rooms of app/worker/ are {sorted(rooms)}"
    upward = [
        f"{a}:{where[(a, b)]} -> {b}"
        for a, targets in edges.items()
        for b in targets
        if (ra := _worker_room(a)) is not None
        and (rb := _worker_room(b)) is not None
        and WORKER_ROOMS.index(rb) > WORKER_ROOMS.index(ra)
    ]
    assert upward == [], "a room of app/worker/ imports one above it:\n" + "\n".join(upward)


@pytest.mark.parametrize("top", PRODUCTION)
def test_production_code_does_not_need_devtools(top: str) -> None:
    edges, _where = _graph()
    starts = [m for m in edges if m == top or m.startswith(top + ".")]
    seen: dict[str, str | None] = {m: None for m in starts}
    queue = list(starts)
    while queue:
        v = queue.pop(0)
        for w in sorted(edges[v]):
            if w not in seen:
                seen[w] = v
                queue.append(w)
    reached = sorted(m for m in seen if m.startswith("app.devtools"))
    chains = []
    for m in reached:
        chain = [m]
        while seen[chain[-1]] is not None:
            chain.append(seen[chain[-1]])  # type: ignore[arg-type]
        chains.append(" -> ".join(reversed(chain)))
    assert not reached, f"{top} reaches developer tooling:\n  " + "\n  ".join(chains)


def test_the_walk_sees_function_level_imports() -> None:
    """The walk itself: a function-level import counts (app.cli imports the worker inside a
    function)."""
    edges, _ = _graph()
    assert "app.worker.cli" in edges["app.cli"]
    assert edges["app.api.main"], "app.api.main imports the domains' routers"


def test_the_circle_finder_finds_circles() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert _cycles(edges) == [(["a", "b", "c", "a"], ["a", "b", "c"])]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# The one actor on a run: only the reconciler calls the backend about a run. The dry run's
# own driver (app/worker/dry_run/driver.py) is not a run: the operation owns it from start to end.
# The pass, its second half over the run's spare (called only from the pass), its thread, and
# the clusters' listings the pass and the sweep observe through (they only read).
RUN_ACTOR = {
    "app/worker/reconcile/run.py",
    "app/worker/reconcile/spare.py",
    "app/worker/reconcile/reconciler.py",
    "app/worker/core/listing.py",
}
NOT_A_RUN = {"app/worker/dry_run/driver.py": "the dry run's driver belongs to its operation"}
BACKEND_CALLS = {"submit", "kill", "find", "status", "statuses", "log_tail"}


def test_only_the_reconciler_acts_on_a_run() -> None:
    offenders = []
    for path in sorted((APP / "worker").rglob("*.py")):
        rel = path.relative_to(APP.parent).as_posix()
        if rel in RUN_ACTOR or rel in NOT_A_RUN:
            continue
        tree = ast.parse(path.read_text(), rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "app.worker.reconcile.run":
                names = {a.name for a in node.names}
                if "reconcile_run" in names:
                    offenders.append(f"{rel}:{node.lineno} imports reconcile_run")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in BACKEND_CALLS
                and "backend" in ast.unparse(node.func.value)
            ):
                offenders.append(f"{rel}:{node.lineno} calls {ast.unparse(node.func)}")
    assert offenders == [], "operations state what they want; reconcile.py acts:\n" + "\n".join(
        offenders
    )
