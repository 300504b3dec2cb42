"""What a route needs before a byte of its body is read (issue 51 M3): the scope its token must
have and the largest body it takes. The middleware matches the route itself (no database, no
body), refuses a token of the wrong scope with the route's own 403 and a body over the route's
limit with a 413, so a read token or a driver's run token cannot make the API buffer and parse
megabytes meant for an admin's call.

A route's scope is read off its dependencies: ``app.auth.deps.require`` and the runtime
channel's dependency carry it as ``required_scope``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.routing import iter_route_contexts
from starlette.types import Scope as AsgiScope

from app.auth.service import Principal, Scope, check_run, check_scope

KIB = 1024
DEFAULT_BODY_LIMIT = 1024 * KIB
# Routes whose bodies are small by nature, and the few that carry more than the default.
BODY_LIMITS = {
    "run.token": 4 * KIB,
    "run.progress": 256 * KIB,  # a batch's progress of every query (L2: kept x100 per query)
    "run.startpoints_applied": 256 * KIB,
    "run.drain_state": 256 * KIB,
    "run.fenced": 64 * KIB,
    "run.query_failure": 64 * KIB,
    "version.create": 1024 * KIB,
}


@dataclass(frozen=True)
class Guard:
    name: str  # the route's (e.g. "job.create")
    path_regex: re.Pattern[str] | None
    scope: Scope | None  # None: the route decides for itself (e.g. the bootstrap exchange)
    body_limit: int

    def check(self, principal: Principal, path: str) -> None:
        """Raise the route's own ``Forbidden`` for a principal the route would refuse."""
        if self.scope is None:
            return
        if self.scope == Scope.RUN:  # the channel's own check, with the run id of the path
            run_id = self.path_regex.match(path) if self.path_regex else None
            params = run_id.groupdict() if run_id else {}
            if str(params.get("run_id", "")).isdigit():
                check_run(principal, int(params["run_id"]))
            return
        check_scope(principal, self.scope)


def guard_for(scope: AsgiScope) -> Guard | None:
    """The guard of the route ``scope`` will reach (None: no route matches)."""
    app = scope["app"]
    # Each route's path pattern, methods and guard, built on the app's first request.
    table: list[tuple[re.Pattern[str], frozenset[str], Guard]] | None = getattr(
        app.state, "route_guards", None
    )
    if table is None:
        table = app.state.route_guards = [
            (ctx.path_regex, frozenset(ctx.methods or ()), _guard_of(ctx))
            for ctx in iter_route_contexts(app.router.routes)
            if getattr(ctx, "path_regex", None) is not None
        ]
    path, method = scope.get("path", ""), scope.get("method", "")
    for regex, methods, guard in table:
        if method in methods and regex.match(path):
            return guard
    return None


def _guard_of(route: Any) -> Guard:
    dependant: Dependant | None = getattr(route, "dependant", None)
    return Guard(
        name=route.name or "unnamed",
        path_regex=getattr(route, "path_regex", None),
        scope=_required_scope(dependant) if dependant else None,
        body_limit=BODY_LIMITS.get(route.name or "", DEFAULT_BODY_LIMIT),
    )


def _required_scope(dependant: Dependant) -> Scope | None:
    for dep in dependant.dependencies:
        found = getattr(dep.call, "required_scope", None) or _required_scope(dep)
        if found is not None:
            return Scope(found)
    return None
