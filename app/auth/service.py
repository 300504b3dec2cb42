"""Bearer tokens: scopes, hashing, creation and checking."""

from __future__ import annotations

import enum
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.auth.models import ApiToken
from app.core.db import utcnow
from app.core.errors import Forbidden, NotFound, Unauthorized
from tidegate_runtime import contract


class Scope(enum.StrEnum):
    READ = "read"
    OPERATE = "operate"
    ADMIN = "admin"
    RUN = "run"  # a run's own runtime channel, nothing else
    BOOTSTRAP = "bootstrap"  # exchanged once, by a run's driver, for its run token


# admin ⊇ operate ⊇ read; a run token holds none of them.
_RANK = {Scope.READ: 1, Scope.OPERATE: 2, Scope.ADMIN: 3, Scope.RUN: 0, Scope.BOOTSTRAP: 0}

TOKEN_PREFIX = "tg_"

# A run token lives this long past its last renewal, and a driver renews it by using it (any
# channel call in the second half of its life): a token whose driver is gone, or that leaked
# and was missed by revocation, stops working within a day. A driver cut off from the API for
# longer exits when it comes back (its calls are refused) and the reconciler starts another.
RUN_TOKEN_LIFETIME = timedelta(hours=24)
_SPENT = (
    "This bootstrap token was already exchanged (or its run was resubmitted): a driver "
    "exchanges it once, when it starts. A driver started by tidegate gets a fresh one."
)


@dataclass(frozen=True)
class Principal:
    name: str
    scope: Scope
    token_id: int | None = None
    run_id: int | None = None

    def allows(self, needed: Scope) -> bool:
        return _RANK[self.scope] >= _RANK[needed] > 0


def hash_token(secret: str) -> str:
    # Tokens are 256-bit random, so a plain SHA-256 is not brute-forceable; no salt needed.
    return hashlib.sha256(secret.encode()).hexdigest()


def create_token(
    session: Session,
    *,
    name: str,
    scope: Scope,
    run_id: int | None = None,
    expires_at: datetime | None = None,
) -> tuple[ApiToken, str]:
    """Returns the stored row and the secret, which is never retrievable again."""
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(
        name=name,
        scope=scope.value,
        token_hash=hash_token(secret),
        prefix=secret[:10],
        run_id=run_id,
        expires_at=expires_at,
    )
    session.add(row)
    session.flush()
    return row, secret


def create_run_token(session: Session, run_id: int, name: str, scope: Scope = Scope.RUN) -> str:
    """A token for one driver of ``run_id``, for RUN_TOKEN_LIFETIME: a run token (its
    channel only), or with ``Scope.BOOTSTRAP`` what a submission hands the driver instead
    (TIDEGATE_RUN_BOOTSTRAP).

    A submission's environment can end up where others read it: Livy has no field for it, so
    it travels as Spark conf that Livy and YARN show and log. The driver's first call trades
    the bootstrap token for its run token (``exchange_bootstrap``), so what was shown is
    spent."""
    _, secret = create_token(
        session, name=name, scope=scope, run_id=run_id, expires_at=utcnow() + RUN_TOKEN_LIFETIME
    )
    return secret


def exchange_bootstrap(session: Session, principal: Principal, run_id: int) -> str:
    """A run token, named as the bootstrap token it replaces, which is spent here: a second
    exchange is refused, and revoking the run's (or a spare's) tokens revokes both."""
    if principal.scope != Scope.BOOTSTRAP or principal.run_id != run_id:
        raise Forbidden(
            f"Only the bootstrap token tidegate handed a driver of run {run_id} (as "
            "TIDEGATE_RUN_BOOTSTRAP) is exchanged for a run token here."
        )
    row = session.scalar(
        select(ApiToken).where(ApiToken.id == principal.token_id).with_for_update()
    )
    if row is None or row.revoked_at is not None:
        raise Unauthorized(_SPENT, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
    row.revoked_at = utcnow()
    return create_run_token(session, run_id, row.name)


def _renew_run_token(session: Session, row: ApiToken, now: datetime) -> None:
    """Push a run token's expiry out again once it is in the second half of its life (one
    write a day per driver, not one per call); a token from before expiry existed gets one."""
    if row.expires_at is None or row.expires_at - now < RUN_TOKEN_LIFETIME / 2:
        session.execute(
            update(ApiToken)
            .where(ApiToken.id == row.id, ApiToken.revoked_at.is_(None))
            .values(expires_at=now + RUN_TOKEN_LIFETIME)
        )


def revoke_token(session: Session, token_id: int) -> None:
    result = session.execute(
        update(ApiToken)
        .where(ApiToken.id == token_id, ApiToken.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
    if result.rowcount == 0:  # type: ignore[attr-defined]
        raise NotFound(f"No active token with id {token_id}.")


def revoke_run_tokens(session: Session, run_id: int) -> None:
    session.execute(
        update(ApiToken)
        .where(ApiToken.run_id == run_id, ApiToken.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )


def spare_token_name(run_id: int, seq: int) -> str:
    """The name of the token a run's spare number ``seq`` carries (beside the run's own)."""
    return f"run-{run_id}-spare{seq}"


def revoke_spare_token(session: Session, run_id: int, seq: int) -> None:
    """A dropped spare's token stops working at once, not when its run ends."""
    session.execute(
        update(ApiToken)
        .where(
            ApiToken.run_id == run_id,
            ApiToken.name == spare_token_name(run_id, seq),
            ApiToken.revoked_at.is_(None),
        )
        .values(revoked_at=utcnow())
    )


def bearer_secret(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None for any other header."""
    kind, _, secret = (authorization or "").partition(" ")
    secret = secret.strip()
    return secret if kind.lower() == "bearer" and secret else None


def admin_principal(authorization: str | None, admin_token: str | None) -> Principal | None:
    """The bootstrap admin, when ``authorization`` carries its token (no database needed)."""
    return _admin(bearer_secret(authorization), admin_token)


def _admin(secret: str | None, admin_token: str | None) -> Principal | None:
    if secret and admin_token and hmac.compare_digest(secret.encode(), admin_token.encode()):
        return Principal(name="admin-token", scope=Scope.ADMIN)
    return None


def authenticate(session: Session, authorization: str | None, admin_token: str | None) -> Principal:
    if not authorization:
        raise Unauthorized(
            "Missing bearer token: send 'Authorization: Bearer <token>' "
            "(create one with 'tidegate tokens create').",
            headers={"WWW-Authenticate": "Bearer"},
        )
    secret = bearer_secret(authorization)
    if secret is None:
        raise Unauthorized(
            "Malformed Authorization header: expected 'Bearer <token>'.",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if (admin := _admin(secret, admin_token)) is not None:
        return admin
    row = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(secret)))
    now = utcnow()
    if row is not None and row.run_id is not None and row.revoked_at is not None:
        spent = row.scope == Scope.BOOTSTRAP
        raise Unauthorized(
            _SPENT
            if spent
            else f"This run token was revoked: run {row.run_id} ended or was resubmitted, so "
            "its runtime channel takes nothing more from this driver, which should exit.",
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )
    if row is None or row.revoked_at is not None or (row.expires_at and row.expires_at <= now):
        raise Unauthorized(
            "The bearer token is unknown, revoked or expired.",
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )
    if row.scope == Scope.RUN:
        _renew_run_token(session, row, now)
    return Principal(name=row.name, scope=Scope(row.scope), token_id=row.id, run_id=row.run_id)


def check_scope(principal: Principal, needed: Scope) -> None:
    if not principal.allows(needed):
        raise Forbidden(
            f"This call needs a token with scope '{needed.value}' (or higher); "
            f"the token '{principal.name}' has scope '{principal.scope.value}'.",
            required_scope=needed.value,
        )


def check_run(principal: Principal, run_id: int) -> None:
    """The runtime channel takes the run's own token only: operator and admin tokens are
    refused, so no API token can post what a driver reports (paths, offsets, progress)."""
    if principal.scope != Scope.RUN:
        raise Forbidden(
            f"The runtime channel of run {run_id} takes only that run's own token (what "
            f"tidegate hands its driver as {contract.RUN_TOKEN_ENV}); the token '{principal.name}' "
            f"has scope '{principal.scope.value}'. Read a run with GET /api/v1/runs/{run_id}.",
            required_scope=Scope.RUN.value,
        )
    if principal.run_id != run_id:
        raise Forbidden(f"This run token belongs to run {principal.run_id}, not run {run_id}.")
