"""How the operation thread moves through the code during one pre-warmed update by snapshot:
every module of app/ it enters, and each time it *re-enters* one it had left (a call into a
module entered before and no longer on the thread's stack; a callback into a module still
waiting below is not a re-entry). Runs the scripted-backend test of that update
(tests/worker/test_update_by_snapshot.py) under a profiler; needs the test database, as
``make unit`` does.

    .venv/bin/python scripts/update_rooms.py            # the summary
    .venv/bin/python scripts/update_rooms.py --path     # and what re-entered each, from where
    .venv/bin/python scripts/update_rooms.py --order    # every entry in order, re-entries marked
    .venv/bin/python scripts/update_rooms.py --all      # also calls between the services
    .venv/bin/python scripts/update_rooms.py --folders  # a folder of app/ is one room

By default only the worker's calls count (what the operation thread does on its way through
app/worker/); with ``--all`` also the services' calls among themselves. The summary also
splits the re-entries by caller: those made by the step lists (the kinds, the standby's
readying, the step runner), which call the room each step needs in turn, and the rest.
"""

from __future__ import annotations

import collections
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEST = (
    "tests/worker/test_update_by_snapshot.py::"
    "test_a_prewarmed_update_runs_its_dry_run_inside_the_standby"
)
# The chaos tests' hook (app/worker/core/context.py::fault_point): a no-op in production.
PLUMBING = frozenset({"fault_point"})
# Where an update is a list of steps, each calling the room it needs (a list re-enters rooms by
# construction): the kinds, the standby's readying, the step runner and the executor.
STEP_LISTS = (
    "app/worker/kinds/",
    "app/worker/standby/ready.py",
    "app/worker/core/steps.py",
    "app/worker/execute.py",
)
FOLDERS = "--folders" in sys.argv


def _room(frame: FrameType) -> str | None:
    """A module of the worker or of a domain's services; not the shared plumbing
    (app/core/: the database session, settings, paths), the ORM models, the snapshot store's
    file I/O or the runtime library, which every room uses."""
    path = Path(frame.f_code.co_filename)
    try:
        relative = path.relative_to(ROOT / "app")
    except ValueError:
        return None
    if relative.parts[0] == "core" or relative.name in ("models.py", "errors.py"):
        return None
    if relative.parts[:2] == ("snapshots", "store"):
        return None
    return "app/" + str(relative.parent if FOLDERS else relative)


def _module(frame: FrameType | None) -> str:
    """The frame's module as a path below the repository ("" for a frame outside it)."""
    if frame is None:
        return ""
    path = Path(frame.f_code.co_filename)
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else ""


class Tracer:
    """Profiles the thread that executes the update operation."""

    def __init__(self, worker_only: bool) -> None:
        self.worker_only = worker_only
        self.entered: list[str] = []
        self.reentries: list[str] = []
        # Every entry in order: "<module>::<function> from <caller>", and whether it re-entered.
        self.walk: list[tuple[str, bool]] = []
        self.by_step_lists = 0

    def profile(self, frame: FrameType, event: str, _: Any) -> None:
        if event != "call":
            return
        room = _room(frame)
        if room is None or frame.f_code.co_name in PLUMBING:
            return
        caller = _room(frame.f_back) if frame.f_back is not None else None
        if caller is None or caller == room:
            return  # called by a library (an ORM hook, a callback), or within one module
        if self.worker_only and not caller.startswith("app/worker/"):
            return  # inside a domain's services: their own business
        below: set[str] = set()
        f = frame.f_back
        while f is not None:
            r = _room(f)
            if r is not None:
                below.add(r)
            f = f.f_back
        again = room in self.entered and room not in below
        if again:
            self.reentries.append(room)
            self.by_step_lists += _module(frame.f_back).startswith(STEP_LISTS)
        self.walk.append((f"{room}::{frame.f_code.co_name} from {caller}", again))
        self.entered.append(room)


class Plugin:
    def __init__(self, worker_only: bool) -> None:
        self.tracer = Tracer(worker_only)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> None:
        from app.operations.models import Operation
        from app.worker import execute as ops

        real = ops.execute
        tracer = self.tracer

        def traced(ctx: Any, op_id: int) -> Any:
            with ctx.factory() as session:
                kind = session.get(Operation, op_id).kind
            if kind != "update":
                return real(ctx, op_id)
            assert threading.current_thread() is threading.main_thread()
            sys.setprofile(tracer.profile)
            try:
                return real(ctx, op_id)
            finally:
                sys.setprofile(None)

        ops.execute = traced  # type: ignore[assignment]


def main() -> int:
    plugin = Plugin(worker_only="--all" not in sys.argv)
    status = pytest.main(["-q", "-p", "no:cacheprovider", TEST], plugins=[plugin])
    tracer = plugin.tracer
    rooms = collections.Counter(tracer.entered)
    again = collections.Counter(tracer.reentries)
    print(
        f"\nmodules entered: {len(rooms)}; entries: {len(tracer.entered)}; "
        f"re-entries (a module left, entered again): {len(tracer.reentries)}"
    )
    lists = tracer.by_step_lists
    print(f"  of them made by the step lists: {lists}; elsewhere: {len(tracer.reentries) - lists}")
    for room, n in again.most_common():
        print(f"  {n:3d}  {room}")
    if "--path" in sys.argv:
        print("\nre-entered, by which function, from where:")
        reentered_by = collections.Counter(how for how, re_entry in tracer.walk if re_entry)
        for how, n in reentered_by.most_common():
            print(f"  {n:3d}  {how}")
    if "--order" in sys.argv:
        print("\nevery entry, in order:")
        for how, re_entry in tracer.walk:
            print(f"  {how}" + ("   <- re-entry" if re_entry else ""))
    return int(status)


if __name__ == "__main__":
    raise SystemExit(main())
