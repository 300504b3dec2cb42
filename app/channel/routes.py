"""The runtime channel's endpoints: the in-job runtime, with its run-scoped token, reads its
directives and reports progress, drain state and applied startpoints. Their paths and the
shapes of what crosses them are the contract's (tidegate_runtime/contract.py), which the
driver's client (tidegate_runtime/driver/channel.py) reads too."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import APIRouter, Depends, Query, Request, Response
from sqlalchemy.orm import Session

from app.auth import service as auth
from app.auth.deps import CurrentPrincipal, PrincipalWithoutSession, Reader
from app.auth.service import Scope, check_run
from app.channel import service as channel
from app.core.deps import AppSettings, DbSession, in_transaction
from app.core.errors import ServiceUnavailable
from app.core.notify import Notifier, TooManyWaiters
from app.core.pagination import Limit
from app.core.params import RunId
from app.runs.schemas import (
    Directives,
    DrainReport,
    FenceReport,
    ProgressReport,
    ProgressResponse,
    QueryFailureReport,
    RunToken,
    StandbyAnswer,
)
from app.runs.service import RUN_CHANNEL, STANDBY_CHANNEL
from app.startpoints import applications as startpoints
from app.startpoints.schemas import AppliedReport
from tidegate_runtime import contract

# The same tag as the runs router: these paths are documented with the runs.
Answer = TypeVar("Answer")

router = APIRouter(tags=["runs"])


def _run_channel(run_id: RunId, principal: CurrentPrincipal) -> int:
    """The run's own token only: checked before the body is even parsed."""
    check_run(principal, run_id)
    return run_id


# Long-polls one run may hold at once per channel: its driver and its spare's, each with
# one in flight while the last is answered. One run token cannot take every place (51 L5).
PLACES_PER_RUN = 4

# Known before the body is read (app/api/route_guard.py): a non-run token is refused unread.
_run_channel.required_scope = Scope.RUN  # type: ignore[attr-defined]
RunChannel = Annotated[int, Depends(_run_channel)]


def _waiting_run_channel(run_id: RunId, principal: PrincipalWithoutSession) -> int:
    check_run(principal, run_id)
    return run_id


# The same check for a long-poll, whose token is read in a transaction of its own.
_waiting_run_channel.required_scope = Scope.RUN  # type: ignore[attr-defined]
WaitingRunChannel = Annotated[int, Depends(_waiting_run_channel)]


@router.post(
    contract.RUN_CHANNEL + contract.TOKEN_PATH,
    response_model=RunToken,
    operation_id="exchangeRunBootstrap",
    name="run.token",
    tags=["runtime"],
    responses={401: {"description": "The bootstrap token was already exchanged."}},
)
def exchange_bootstrap(run_id: RunId, principal: CurrentPrincipal, session: DbSession) -> RunToken:
    """A driver's first call: the single-use bootstrap token tidegate started it with
    (TIDEGATE_RUN_BOOTSTRAP, which a backend may show as conf) for its run token."""
    return RunToken(token=auth.exchange_bootstrap(session, principal, run_id))


async def _long_poll(
    request: Request,
    channel_name: str,
    run_id: int,
    read: Callable[[Session], Answer],
    done: Callable[[Answer], bool],
    wait: int,
) -> Answer:
    """The answer once ``done`` says so, held up to ``wait`` seconds: subscribed to the run's
    channel before the first read (a decision in between is not missed), woken by the
    worker's NOTIFY, each read in a transaction of its own (a waiting driver holds no thread
    and no database connection, only its place among the notifier's waiters). Raises
    TooManyWaiters when the process has no place left."""
    notifier: Notifier = request.app.state.notifier
    deadline = time.monotonic() + wait
    with notifier.subscribe(channel_name, str(run_id), most=PLACES_PER_RUN) as waiter:
        answer = await in_transaction(request, read)
        while not done(answer):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            woken = await waiter.wait(notifier.poll_interval(left))
            if not woken and time.monotonic() >= deadline:
                break  # nothing changed: the answer read last stands
            answer = await in_transaction(request, read)
    return answer


@router.get(
    contract.RUN_CHANNEL + contract.DIRECTIVES_PATH,
    response_model=Directives,
    operation_id="getRunDirectives",
    name="run.directives",
    tags=["runtime"],
)
async def get_directives(
    run_id: WaitingRunChannel,
    request: Request,
    settings: AppSettings,
    attempt: Annotated[
        int | None, Query(ge=0, le=2**31, description="The caller's attempt.")
    ] = None,
    wait: Annotated[
        int,
        Query(
            ge=0,
            le=25,
            description="Long-poll: hold the answer up to this many seconds until the run is "
            "to stop or drain (answered the moment it is). A driver that asks this way between "
            "its checks sees a stop at once rather than at its next poll.",
        ),
    ] = 0,
) -> Directives:
    # Async, each read in a transaction of its own: a waiting driver holds no thread and no
    # database connection (as the standby's long-poll below).
    def read(session: Session) -> Directives:
        return channel.directives(session, run_id, attempt, settings.resolved_checkpoint_root)

    notifier: Notifier = request.app.state.notifier
    # Running drivers take at most half of the process's waiting places: standbys waiting
    # for go always find room. Past that, a driver is answered now and asks again later.
    if wait == 0 or notifier.waiting >= notifier.max_waiters // 2:
        return await in_transaction(request, read)
    try:
        return await _long_poll(
            request, RUN_CHANNEL, run_id, read, lambda a: a.stop or a.drain is not None, wait
        )
    except TooManyWaiters:
        return await in_transaction(request, read)


@router.get(
    contract.RUN_CHANNEL + contract.STANDBY_PATH,
    response_model=StandbyAnswer,
    operation_id="getRunStandby",
    name="run.standby",
    tags=["runtime"],
)
async def get_standby(
    run_id: WaitingRunChannel,
    request: Request,
    attempt: Annotated[
        int | None, Query(ge=0, le=2**31, description="The caller's attempt.")
    ] = None,
    wait: Annotated[
        int,
        Query(
            ge=0,
            le=25,
            description="Long-poll: hold the answer up to this many seconds until go or "
            "release (answered the moment the worker decides).",
        ),
    ] = 0,
    spare: Annotated[
        int | None,
        Query(
            ge=1,
            le=2**31,
            description="A spare's number (its run's next attempt, started ahead): its go "
            "comes when that attempt starts.",
        ),
    ] = None,
) -> StandbyAnswer:
    # Async, and each read in a transaction of its own: a waiting driver holds no thread and
    # no database connection, only its place among the notifier's waiters.
    def read(session: Session) -> StandbyAnswer:
        return channel.standby(session, run_id, attempt, spare)

    if wait == 0:
        return await in_transaction(request, read)
    try:
        return await _long_poll(
            request, STANDBY_CHANNEL, run_id, read, lambda a: a.go or a.stop, wait
        )
    except TooManyWaiters as exc:
        raise ServiceUnavailable(
            f"No place to wait in this API process ({exc}); ask again after Retry-After "
            "seconds, or spread drivers over more API processes.",
            headers={"Retry-After": "2"},
        ) from None


@router.post(
    contract.RUN_CHANNEL + contract.PROGRESS_PATH,
    status_code=204,
    operation_id="postRunProgress",
    name="run.progress",
    tags=["runtime"],
)
def post_progress(run_id: RunChannel, body: ProgressReport, session: DbSession) -> Response:
    channel.record_progress(session, run_id, body)
    return Response(status_code=204)


@router.get(
    contract.RUN_CHANNEL + contract.PROGRESS_PATH,
    response_model=list[ProgressResponse],
    operation_id="listRunProgress",
    name="run.progress_history",
)
def list_progress(
    run_id: RunId,
    session: DbSession,
    _: Reader,
    query: Annotated[str | None, Query(max_length=128)] = None,
    limit: Limit = 50,
) -> list[ProgressResponse]:
    rows = channel.progress_history(session, run_id, query, limit)
    return [ProgressResponse.model_validate(r) for r in rows]


@router.post(
    contract.RUN_CHANNEL + contract.STARTPOINTS_APPLIED_PATH,
    status_code=204,
    operation_id="postStartpointsApplied",
    name="run.startpoints_applied",
    tags=["runtime"],
)
def post_startpoints_applied(
    run_id: RunChannel, body: list[AppliedReport], session: DbSession, settings: AppSettings
) -> Response:
    run = channel.live_run(session, run_id)
    startpoints.record_applied(session, run, body, settings.resolved_checkpoint_root)
    return Response(status_code=204)


@router.post(
    contract.RUN_CHANNEL + contract.DRAIN_PATH,
    status_code=204,
    operation_id="postRunDrainState",
    name="run.drain_state",
    tags=["runtime"],
)
def post_drain_state(run_id: RunChannel, body: DrainReport, session: DbSession) -> Response:
    channel.record_drain(session, run_id, body)
    return Response(status_code=204)


@router.post(
    contract.RUN_CHANNEL + contract.FENCED_PATH,
    status_code=204,
    operation_id="postRunFenced",
    name="run.fenced",
    tags=["runtime"],
)
def post_fenced(run_id: RunChannel, body: FenceReport, session: DbSession) -> Response:
    """The driver stopped its queries at a batch boundary and its Spark session: a stopping
    run ends now (an update or restart goes on without waiting for the process to exit)."""
    channel.record_fence(session, run_id, body)
    return Response(status_code=204)


@router.post(
    contract.RUN_CHANNEL + contract.QUERY_FAILURES_PATH,
    status_code=204,
    operation_id="postRunQueryFailure",
    name="run.query_failure",
    tags=["runtime"],
)
def post_query_failure(
    run_id: RunChannel, body: QueryFailureReport, session: DbSession
) -> Response:
    """A query failed and the driver restarts it alone after the restart policy's backoff
    (its other queries keep running), or it has used up its restarts and the driver ends.
    Shown on the run as query_restarts."""
    channel.record_query_failure(session, run_id, body)
    return Response(status_code=204)
