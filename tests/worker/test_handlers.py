"""Every operation kind the API accepts has a worker handler, and the worker handles no kind
the API cannot queue: a kind added to one side only fails here, not at run time."""

from __future__ import annotations

from typing import get_args

from app.operations.schemas import OperationKind
from app.worker.execute import HANDLERS


def test_every_operation_kind_has_a_handler_and_every_handler_a_kind() -> None:
    kinds = set(get_args(OperationKind))
    assert kinds, "OperationKind is no longer a Literal: read its values another way"
    assert sorted(kinds - set(HANDLERS)) == [], "kinds the API queues but no worker carries out"
    assert sorted(set(HANDLERS) - kinds) == [], "handlers for kinds the API cannot queue"
