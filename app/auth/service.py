"""Bearer tokens: scopes, hashing, creation and checking."""

from __future__ import annotations

import enum
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.auth.models import ApiToken
from app.core.db import utcnow
from app.core.errors import Forbidden, NotFound, Unauthorized


class Scope(enum.StrEnum):
    READ = "read"
    OPERATE = "operate"
    ADMIN = "admin"
    RUN = "run"  # a run's own runtime channel, nothing else


# admin ⊇ operate ⊇ read; a run token holds none of them.
_RANK = {Scope.READ: 1, Scope.OPERATE: 2, Scope.ADMIN: 3, Scope.RUN: 0}

TOKEN_PREFIX = "tg_"


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
        raise Unauthorized(
            f"This run token was revoked: run {row.run_id} ended or was resubmitted, so its "
            "runtime channel takes nothing more from this driver, which should exit.",
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )
    if row is None or row.revoked_at is not None or (row.expires_at and row.expires_at <= now):
        raise Unauthorized(
            "The bearer token is unknown, revoked or expired.",
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )
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
            f"tidegate hands its driver as TIDEGATE_RUN_TOKEN); the token '{principal.name}' "
            f"has scope '{principal.scope.value}'. Read a run with GET /api/v1/runs/{run_id}.",
            required_scope=Scope.RUN.value,
        )
    if principal.run_id != run_id:
        raise Forbidden(f"This run token belongs to run {principal.run_id}, not run {run_id}.")
