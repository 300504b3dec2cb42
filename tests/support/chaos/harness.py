"""What the fault-injection tests share: a tidegate stack of their own on the session's local
runner, workers that die on cue, and the checks that must hold after every fault."""

from __future__ import annotations

import ast
import json
import random
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import psycopg

from app.core.config import Settings
from tests.support.e2e import (
    RUNNER_AUTH,
    SPARK_TEST_CONF,
    runner_cluster,
    spark_submit_processes,
)
from tests.support.stack import ROOT, Stack, running_stack, wait_until
from tidegate_runtime.sources.eventlog import EventLog

WORKER = ROOT / "app" / "worker"
# The HANDLERS table (kind -> handler) lives in the dispatcher; the handlers and the steps
# they share are in the modules of app/worker/ it imports, found through their imports.
OPERATIONS = WORKER / "execute.py"
RECONCILE = WORKER / "reconcile" / "run.py"
RUNNER_ENDED = frozenset({"success", "dead", "killed"})


# ---- step names, read from the worker's code --------------------------------------------


def _calls_in_order(fn: ast.AST) -> list[ast.Call]:
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)]
    return sorted(calls, key=lambda c: (c.lineno, c.col_offset))


def _handlers(tree: ast.Module) -> dict[str, str]:
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            if isinstance(target, ast.Name) and target.id == "HANDLERS":
                assert isinstance(node.value, ast.Dict)
                return {
                    k.value: v.id
                    for k, v in zip(node.value.keys, node.value.values, strict=True)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Name)
                }
    raise AssertionError(f"no HANDLERS table in {OPERATIONS}")


def _text(node: ast.expr, bindings: dict[str, object]) -> str | None:
    """A step name: a string literal, or an f-string over parameters bound to constants."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name):
                bound = bindings.get(value.value.id)
                if not isinstance(bound, str):
                    return None
                parts.append(bound)
            else:
                return None
        return "".join(parts)
    return None


def _bind(
    fn: ast.FunctionDef, call: ast.Call | None, outer: dict[str, object] | None = None
) -> dict[str, object]:
    """Parameter -> constant value at this call (or the parameter's default): a literal, or
    a name the caller itself has bound (a prefix handed on)."""
    outer = outer or {}

    def value(arg: ast.expr) -> tuple[bool, object]:
        if isinstance(arg, ast.Constant):
            return True, arg.value
        if isinstance(arg, ast.Name) and arg.id in outer:
            return True, outer[arg.id]
        return False, None

    params = [a.arg for a in fn.args.args]
    defaults = fn.args.defaults
    bound: dict[str, object] = {
        name: d.value
        for name, d in zip(params[len(params) - len(defaults) :], defaults, strict=True)
        if isinstance(d, ast.Constant)
    }
    if call is not None:
        for name, arg in zip(params, call.args, strict=False):
            known, v = value(arg)
            if known:
                bound[name] = v
        for kw in call.keywords:
            known, v = value(kw.value)
            if kw.arg and known:
                bound[kw.arg] = v
    return bound


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _worker_modules() -> dict[str, ast.Module]:
    """Every module of app/worker/ but the reconciler's pass (its fault points are its own)."""
    return {
        _dotted(p): ast.parse(p.read_text())
        for p in sorted(WORKER.rglob("*.py"))
        if p != RECONCILE and p.name != "__init__.py"
    }


def _declared_lists(tree: ast.Module) -> dict[str, ast.expr]:
    """A module's declared step lists (app/worker/core/steps.py::Phase): name -> its value."""
    lists: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign) and node.value is not None:
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            if isinstance(target, ast.Name) and any(
                isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "Phase"
                for c in ast.walk(node.value)
            ):
                lists[target.id] = node.value
    return lists


def _names_in(module: str, tree: ast.Module, known: set[str]) -> dict[str, tuple[str, str]]:
    """What a bare name or ``alias.`` means in ``module``: its own functions (nested ones
    too) and declared step lists, the functions it imports, and the worker modules it imports
    (name -> (module, ""))."""
    names: dict[str, tuple[str, str]] = {
        n.name: (module, n.name) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
    }
    names.update({name: (module, name) for name in _declared_lists(tree)})
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                whole = f"{node.module}.{alias.name}"
                names[alias.asname or alias.name] = (
                    (whole, "") if whole in known else (node.module, alias.name)
                )
    return names


def step_names() -> dict[str, list[str]]:
    """Each operation kind's step names, in the order its handler reaches them: the
    ``steps.run(name, …)`` calls and the ``Step(name, …)`` entries of declared lists, in the
    handler and in the functions it calls or hands on (a step's body, a phase's
    ``on_failure``), each resolved through the calling module's own imports (every branch, so
    a name may lie off the path of a plain request of that kind)."""
    trees = _worker_modules()
    scopes = {m: _names_in(m, t, set(trees)) for m, t in trees.items()}
    functions: dict[tuple[str, str], ast.AST] = {
        (m, n.name): n
        for m, t in trees.items()
        for n in ast.walk(t)
        if isinstance(n, ast.FunctionDef)
    }
    functions.update(
        {(m, name): value for m, t in trees.items() for name, value in _declared_lists(t).items()}
    )

    def resolve(module: str, func: ast.expr) -> tuple[str, str] | None:
        scope = scopes[module]
        if isinstance(func, ast.Name):
            return scope.get(func.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            target = scope.get(func.value.id)
            if target is not None and target[1] == "":
                return (target[0], func.attr)
        return None

    def visit(
        where: tuple[str, str],
        call: ast.Call | None,
        stack: tuple,
        outer: dict[str, object] | None = None,
    ) -> list[str]:
        if where in stack or where not in functions:
            return []
        fn = functions[where]
        bindings = _bind(fn, call, outer) if isinstance(fn, ast.FunctionDef) else {}
        out: list[str] = []
        for inner in _calls_in_order(fn):
            func = inner.func
            if isinstance(func, ast.Name) and func.id == "Step" and inner.args:
                text = _text(inner.args[0], bindings)
                if text is not None:
                    out.append(text)
            # A function or a declared list handed on (a step's body, an on_failure, the
            # list run_phases runs) is reached as if called here.
            for arg in [*inner.args, *(k.value for k in inner.keywords)]:
                handed = (
                    resolve(where[0], arg) if isinstance(arg, ast.Name | ast.Attribute) else None
                )
                if handed is not None:
                    out.extend(visit(handed, None, (*stack, where), bindings))
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "run"
                and (
                    (isinstance(func.value, ast.Name) and func.value.id == "steps")
                    or (isinstance(func.value, ast.Attribute) and func.value.attr == "steps")
                )
                and inner.args
            ):
                text = _text(inner.args[0], bindings)
                if text is not None:
                    out.append(text)
                continue
            target = resolve(where[0], func)
            if target is not None:
                out.extend(visit(target, inner, (*stack, where), bindings))
        return list(dict.fromkeys(out))

    dispatcher = _dotted(OPERATIONS)
    return {
        kind: visit(scopes[dispatcher][handler], None, ())
        for kind, handler in _handlers(trees[dispatcher]).items()
    }


def reconcile_fault_points() -> list[str]:
    """The ``fault_point("reconcile:…")`` names around the backend submission."""
    tree = ast.parse(RECONCILE.read_text())
    return [
        str(call.args[0].value)
        for call in _calls_in_order(tree)
        if isinstance(call.func, ast.Name)
        and call.func.id == "fault_point"
        and call.args
        and isinstance(call.args[0], ast.Constant)
    ]


def fault_points(kind: str) -> list[str]:
    """Every place a worker carrying out ``kind`` can be killed: after each of its steps,
    and (for kinds that submit a driver) just before and just after the backend call."""
    points = [f"{kind}:{step}" for step in step_names()[kind]]
    if kind in ("submit", "restart"):
        points += reconcile_fault_points()
    return points


# ---- the stack ----------------------------------------------------------------------------


@dataclass
class Chaos:
    """A tidegate stack (API thread, own database, worker processes) on the shared runner."""

    stack: Stack
    runner_url: str
    run_ids: range = range(0)  # this stack's run ids (the runner is shared)

    @property
    def client(self) -> httpx.Client:
        return self.stack.client

    def healthy_worker(self) -> subprocess.Popen[bytes]:
        self.stack.stop_workers()
        return self.stack.start_worker()

    def request(self, job: str, verb: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        r = self.client.post(f"/jobs/{job}/{verb}", json=body)
        assert r.status_code == 202, r.text
        op: dict[str, Any] = r.json()
        return op

    def operate(self, job: str, verb: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """A lifecycle operation carried out by a healthy worker, to its end."""
        if not any(p.poll() is None for p in self.stack.workers):
            self.healthy_worker()
        return self.stack.wait_operation(self.request(job, verb, body)["id"])

    def killed_at(
        self, fault: str, job: str, verb: str, body: dict[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """Carry out one operation with a worker that SIGKILLs itself at ``fault``, then let a
        fresh worker finish it. Returns the finished operation, or None when the operation
        finished without passing ``fault`` (a step of another path of that kind)."""
        self.stack.stop_workers()
        doomed = self.stack.start_worker(TIDEGATE_FAULT_AT=fault)
        op = self.request(job, verb, body)

        def status() -> tuple[int | None, dict[str, Any]]:
            return doomed.poll(), self.client.get(f"/operations/{op['id']}").json()

        code, state = wait_until(
            status, lambda s: s[0] is not None or s[1]["state"] in ("succeeded", "failed"), 300
        )
        if code is None:  # finished without reaching the fault point
            reached = [s["name"] for s in state["steps"]]
            assert fault.split(":", 1)[1] not in reached, (fault, reached)
            return None
        assert code == 137, f"the worker exited {code}, not at {fault}"
        assert state["state"] == "running", state  # killed mid-way, not finished
        self.expire_lease_of(doomed.pid)
        self.stack.start_worker()
        done = self.stack.wait_operation(op["id"])
        assert done["state"] == "succeeded", done
        return done

    def expire_lease_of(self, pid: int) -> None:
        """The dead worker's lease would run out by itself (30 s); end it now. The lease is
        what lets another worker take over; its expiry is covered by the e2e suite."""
        with psycopg.connect(self.stack.database_url, autocommit=True) as conn:
            conn.execute(
                "update operations set lease_expires_at = now() - interval '1 second' "
                "where state = 'running' and lease_owner like %s",
                (f"%:{pid}:%",),
            )

    def batches(self, run_id: int) -> list[dict[str, Any]]:
        """The runner's batches that belong to ``run_id`` (any attempt), oldest first."""
        body = httpx.get(
            f"{self.runner_url}/batches", params={"size": 10_000}, headers=RUNNER_AUTH
        ).json()
        prefix = f"tidegate-run-{run_id}-a"
        return [b for b in body["sessions"] if (b.get("name") or "").startswith(prefix)]

    def drivers(self, run_id: int) -> list[str]:
        """Tags of the live spark-submit processes of ``run_id``."""
        prefix = f"tidegate-run-{run_id}-a"
        tags = []
        for proc in spark_submit_processes(prefix):
            args = proc.info["cmdline"] or []
            if "--name" in args:
                tags.append(args[args.index("--name") + 1])
        return tags

    def _fenced_backend_id(self, run_id: int) -> str | None:
        """The run's fenced earlier attempt yet to exit (not in the API: the worker's own)."""
        with psycopg.connect(self.stack.database_url) as conn:
            row = conn.execute(
                "select fenced_backend_id from runs where id = %s", (run_id,)
            ).fetchone()
        return None if row is None else row[0]

    def _live(self, run_id: int) -> tuple[set[str], set[str]]:
        """The run's drivers still alive, and its spares submitted for a later attempt than
        its current one, from one read (afresh each call: a hot spare may be submitted while
        a check waits)."""
        attempt = self.stack.run(run_id)["attempt"]
        batches = self.batches(run_id)
        live = {b["name"] for b in batches if b["state"] not in RUNNER_ENDED}
        waiting = {
            b["name"] for b in batches if (tag := _attempt_of(b["name"]))[1] and tag[0] > attempt
        }
        return live, waiting

    def assert_one_driver_per_attempt(self, run_id: int) -> dict[str, Any]:
        """Exactly one submission per attempt — its own, or the spare it adopted (named
        ``…-a<k>-spare<s>``, submitted ahead) — and only the current attempt may be alive,
        beside a spare still waiting for the next one."""
        run = self.stack.run(run_id)
        batches = self.batches(run_id)
        attempts = [_attempt_of(b["name"]) for b in batches]
        adopted = [b["name"] for b in batches if not b["name"].endswith("-spare")]
        per_attempt = [a for a, _ in attempts if a <= run["attempt"]]
        # A spare that was never adopted (dropped, or waiting) is one more name for its attempt.
        assert sorted(set(per_attempt)) == list(range(run["attempt"] + 1)), adopted
        plain = [a for a, spare in attempts if not spare]
        assert len(plain) == len(set(plain)), [b["name"] for b in batches]
        current = run["tag"]
        # An attempt stopped by tidegate ends on its driver's fence (queries and Spark session
        # stopped), before that process exits: a restart's spare takes over at once, and the
        # fenced process exits by itself, or the worker kills it after
        # TIDEGATE_FENCED_EXIT_SECONDS (20 s in the test stacks). So the earlier attempt the
        # run records as fenced may still be live until then; no other may, at any moment.
        fenced = self._fenced_backend_id(run_id)  # read first: cleared only once it ended
        live = [b for b in self.batches(run_id) if b["state"] not in RUNNER_ENDED]
        allowed = {current} | self._live(run_id)[1]  # read after: a spare just submitted
        intruders = [b["name"] for b in live if b["name"] not in allowed and str(b["id"]) != fenced]
        assert not intruders, (intruders, current, run["state"])
        wait_until(
            lambda: self._live(run_id),
            lambda seen: seen[0] <= {current} | seen[1],
            60,
            what=f"the fenced driver {fenced} to exit",
        )
        if run["state"] in ("stopped", "cancelled", "failed", "succeeded"):
            wait_until(lambda: self._live(run_id)[0], lambda still: not still, 60)
        drivers = wait_until(
            lambda: (self.drivers(run_id), self._live(run_id)[1]),
            lambda seen: set(seen[0]) <= {current} | seen[1],
            30,
        )
        assert len(set(drivers[0]) - drivers[1]) <= 1, drivers
        return run


def _attempt_of(tag: str) -> tuple[int, bool]:
    """(attempt, is a spare) of a driver's tag ``tidegate-run-<id>-a<k>[-spare<s>]``."""
    rest = tag.split("-a")[-1]
    attempt, _, spare = rest.partition("-spare")
    return int(attempt), bool(spare)


@contextmanager
def chaos_stack(tmp: Path, runner_url: str, server: str | None = None) -> Iterator[Chaos]:
    """Run ids start far from other stacks' (the runner is shared; tags carry run ids).
    ``server``: a PostgreSQL server of the test's own (default: the tests' shared one)."""
    first_id = random.randrange(1, 9_000) * 1_000_000
    pool_size = Settings().db_pool_size  # the production default, not the tests' small pool
    with running_stack(tmp, first_id=first_id, pool_size=pool_size, server=server) as stack:
        r = stack.client.post("/clusters", json=runner_cluster(runner_url))
        assert r.status_code == 201, r.text
        try:
            yield Chaos(stack, runner_url, range(first_id, first_id + 1_000_000))
        finally:
            kill_active_runs(stack.database_url, runner_url)


def kill_active_runs(database_url: str, runner_url: str) -> None:
    """Kill the batches of runs a stack left running (a failed test must leave no driver)."""
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "select backend_id from runs where backend_id is not null and state in "
            "('submitting', 'running', 'stopping', 'draining', 'restarting')"
        ).fetchall()
    for (run,) in rows:
        httpx.delete(f"{runner_url}/batches/{run}", headers=RUNNER_AUTH, timeout=30)


# ---- a real pipeline whose output proves nothing was lost or repeated --------------------


def enrich_version(chaos: Chaos, job: str, root: Path, out: Path) -> int:
    body = {
        "app": {
            "file": str(ROOT / "pipelines" / "enrich.py"),
            "args": ["--root", str(root), "--stream", "clicks", "--output", str(out)],
        },
        "cluster": "runner",
        "conf": {**SPARK_TEST_CONF, "spark.sql.session.timeZone": "UTC"},
        "queries": [
            {
                "name": "enrich",
                "sources": [
                    {
                        "name": "clicks",
                        "kind": "eventlog",
                        "options": {"root": str(root), "stream": "clicks"},
                    }
                ],
                "output_mode": "append",
                "trigger": "1 SECONDS",
            }
        ],
    }
    r = chaos.client.post(f"/jobs/{job}/versions", json=body)
    assert r.status_code == 201, r.text
    number: int = r.json()["number"]
    return number


def committed_files(out: Path) -> list[Path]:
    """The files a file sink committed (its ``_spark_metadata`` log): what readers see.
    Part files of a batch that died before its commit are not among them."""
    log = out / "_spark_metadata"
    if not log.is_dir():
        return []
    batches = sorted(
        (int(p.name.split(".")[0]), p) for p in log.iterdir() if p.name.split(".")[0].isdigit()
    )
    compacts = [b for b, p in batches if p.name.endswith(".compact")]
    start = compacts[-1] if compacts else -1
    files: dict[str, bool] = {}
    for batch, path in batches:
        if batch < start or (batch == start and not path.name.endswith(".compact")):
            continue
        for line in path.read_text().splitlines()[1:]:
            entry = json.loads(line)
            files[entry["path"]] = entry["action"] != "delete"
    return [Path(urlsplit(p).path) for p, keep in files.items() if keep]


def enrich_rows(out: Path) -> list[tuple[int, int, float]]:
    """(partition, offset, amount) of every committed output row, sorted, duplicates kept."""
    rows = []
    for part in committed_files(out):
        for line in part.read_text().splitlines():
            row = json.loads(line)
            rows.append((row["partition"], row["offset"], row["amount"]))
    return sorted(rows)


def caught_up(chaos: Chaos, run_id: int, root: Path) -> Callable[[], bool]:
    """True once the run's progress reached the end of the log."""
    latest = {str(p): o for p, o in EventLog(root).stream("clicks").latest_offsets().items()}

    def check() -> bool:
        progress = chaos.stack.run(run_id)["progress"].get("enrich") or {}
        return bool((progress.get("sources") or [{}])[0].get("end_offset") == latest)

    return check
