"""FastAPI dependencies that authenticate the caller and check its scope."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

import anyio.to_thread
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from app.auth.service import Principal, Scope, admin_principal, authenticate, check_scope
from app.core.deps import DbSession, in_transaction

# auto_error=False: we answer missing tokens ourselves, as problem+json.
_bearer = HTTPBearer(auto_error=False, description="A tidegate API token.")
Bearer = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


async def _principal(request: Request, session: DbSession, _: Bearer) -> Principal:
    # Async, so that checking a token costs a thread hop only when it needs the database.
    known: Principal | None = getattr(request.state, "principal", None)
    if known is None:
        admin = request.app.state.settings.admin_token
        known = admin_principal(
            request.headers.get("authorization"), admin.get_secret_value() if admin else None
        )
    if known is not None:
        request.state.principal = known
        return known
    return await anyio.to_thread.run_sync(_authenticate, request, session)


async def _principal_without_session(request: Request, _: Bearer) -> Principal:
    return await in_transaction(request, lambda session: _authenticate(request, session))


def _authenticate(request: Request, session: Session) -> Principal:
    # A request with a body was authenticated before its body was read (the middleware).
    known: Principal | None = getattr(request.state, "principal", None)
    if known is not None:
        return known
    admin = request.app.state.settings.admin_token
    principal = authenticate(
        session,
        request.headers.get("authorization"),
        admin.get_secret_value() if admin else None,
    )
    request.state.principal = principal
    return principal


CurrentPrincipal = Annotated[Principal, Depends(_principal)]
# For an async endpoint that holds no connection while it waits (a long-poll).
PrincipalWithoutSession = Annotated[Principal, Depends(_principal_without_session)]


def require(scope: Scope) -> Callable[[Principal], Awaitable[Principal]]:
    async def dep(principal: CurrentPrincipal) -> Principal:  # no thread for a comparison
        check_scope(principal, scope)
        return principal

    dep.required_scope = scope  # type: ignore[attr-defined]  # read before the body (route_guard)
    return dep


Reader = Annotated[Principal, Depends(require(Scope.READ))]
Operator = Annotated[Principal, Depends(require(Scope.OPERATE))]
Admin = Annotated[Principal, Depends(require(Scope.ADMIN))]
