"""The step engine every operation runs on: named steps, each carried out once and its
completion committed under the operation's lease, so a worker killed at any point resumes the
operation where it stopped. Also what a step may raise and how an operation shows progress."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar, cast

from sqlalchemy import update

from app.core.db import transaction, utcnow
from app.core.plans import StoredPlan
from app.operations.models import RUNNING, Operation
from app.worker.core.context import WorkerContext, fault_point


class LeaseLost(Exception):
    """Another worker took the operation over (our lease expired): stop touching it."""


class OperationFailed(Exception):
    def __init__(self, message: str, result: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.result = result


class Steps:
    """Runs named steps once each, committing each completion under our lease."""

    def __init__(self, ctx: WorkerContext, op_id: int) -> None:
        self.ctx = ctx
        self.op_id = op_id

    def load(self) -> Operation:
        with self.ctx.factory() as session:
            op = session.get(Operation, self.op_id)
            assert op is not None
            session.expunge(op)
            return op

    def details(self) -> dict[str, dict[str, Any]]:
        """Every recorded step's detail by name, in one read."""
        return self.load().step_details()

    def run(self, name: str, fn: Callable[[], Mapping[str, Any] | None]) -> None:
        if self.load().step_done(name):
            return
        detail = fn()
        with transaction(self.ctx.factory) as session:
            op = session.get(Operation, self.op_id, with_for_update=True, populate_existing=True)
            assert op is not None
            if op.lease_owner != self.ctx.worker_id:
                raise LeaseLost(f"operation {self.op_id} is now {op.lease_owner}'s")
            op.steps = [*op.steps, {"name": name, "at": utcnow().isoformat(), "detail": detail}]
        fault_point(f"{self.load().kind}:{name}")


S = TypeVar("S")


def _always(_: object) -> bool:
    return True


@dataclass(frozen=True)
class Step(Generic[S]):
    """One named step of a declared list: ``body`` carried out once (what it returns is the
    step's recorded detail), if ``when`` holds for the operation when the list reaches it."""

    name: str
    body: Callable[[S], Mapping[str, Any] | None]
    when: Callable[[S], bool] = _always


@dataclass(frozen=True)
class Part(Generic[S]):
    """A part of a declared list that runs steps of its own (a sequence other operations share,
    such as saving a snapshot); its own list or docstring names them. Runs again on a resume:
    its steps are what skip what is done."""

    body: Callable[[S], None]
    when: Callable[[S], bool] = _always


@dataclass(frozen=True)
class Phase(Generic[S]):
    """Steps that stand or fall together: when one fails (OperationFailed), ``on_failure``
    undoes what the phase started and returns the error the operation ends with."""

    title: str
    steps: Sequence[Step[S] | Part[S]]
    when: Callable[[S], bool] = _always
    on_failure: Callable[[S, OperationFailed], OperationFailed] | None = None


def run_phases(steps: Steps, subject: S, phases: Sequence[Phase[S]]) -> dict[str, dict[str, Any]]:
    """An operation's declared list, in order: each step once, each phase's failure answered
    by its own ``on_failure``. Returns what the steps recorded (``Steps.details``)."""
    for phase in phases:
        if not phase.when(subject):
            continue
        try:
            run_steps(steps, subject, phase.steps)
        except OperationFailed as exc:
            if phase.on_failure is None:
                raise
            raise phase.on_failure(subject, exc) from None
    return steps.details()


def run_steps(steps: Steps, subject: S, declared: Sequence[Step[S] | Part[S]]) -> None:
    for step in declared:
        if not step.when(subject):
            continue
        if isinstance(step, Step):
            steps.run(step.name, partial(step.body, subject))
        else:
            step.body(subject)


def detail(steps: Steps, name: str) -> dict[str, Any]:
    for step in steps.load().steps:
        if step["name"] == name:
            return dict(step.get("detail") or {})
    raise KeyError(name)


def planned(steps: Steps, name: str) -> StoredPlan:
    """The plan a step recorded (``plan``, ``dry_run_plan``, ``rollback_plan``…)."""
    return cast(StoredPlan, detail(steps, name))


def set_result(ctx: WorkerContext, op_id: int, result: dict[str, Any]) -> None:
    """Progress of a long operation, visible on GET /operations/{id} while it runs."""
    with transaction(ctx.factory) as session:
        session.execute(
            update(Operation)
            .where(Operation.id == op_id, Operation.state == RUNNING)
            .values(result=result)
        )
