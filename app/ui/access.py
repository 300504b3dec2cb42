"""Who may read the status page. A browser cannot send a bearer header, so a person pastes a
token once into /ui/login; the browser then holds a session: a random secret in an HttpOnly,
SameSite=Strict cookie scoped to /ui, whose hash is a server-side record that ends after
``SESSION_HOURS``, at logout, or when the token it logged in with is revoked or expires (the
bootstrap admin token's: when TIDEGATE_ADMIN_TOKEN is rotated). The
token itself is never kept by the browser and never goes into a URL. The login form carries a
CSRF token (double-submit: a SameSite=Strict cookie and a hidden field that must match) and a
login from another origin is refused, so no other site can log a browser in as someone else.
The Authorization header still works for scripts."""

from __future__ import annotations

import hmac
import secrets
from datetime import timedelta
from urllib.parse import urlencode, urlsplit

from fastapi import Request, Response
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.auth.models import ApiToken
from app.auth.service import Principal, Scope, authenticate, check_scope, hash_token
from app.core.db import utcnow
from app.core.errors import Forbidden, Unauthorized
from app.ui.models import UiSession

COOKIE = "tidegate_ui_session"
CSRF_COOKIE = "tidegate_ui_csrf"
UI_PATH = "/ui"
MAX_TOKEN_CHARS = 512
SESSION_HOURS = 8


class LoginRequired(Exception):
    """No valid read token on a page request: the handler sends the browser to log in."""

    def __init__(self, back_to: str) -> None:
        super().__init__(back_to)
        self.back_to = back_to


class LoginRefused(Exception):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def _admin_token(request: Request) -> str | None:
    admin = request.app.state.settings.admin_token
    return admin.get_secret_value() if admin else None


def reader(request: Request, session: Session) -> Principal:
    """The page's reader from the Authorization header, else the session cookie; read scope
    or above."""
    header = request.headers.get("authorization")
    cookie = request.cookies.get(COOKIE)
    try:
        if header:
            principal = authenticate(session, header, _admin_token(request))
        elif cookie:
            principal = _session_principal(session, cookie, _admin_token(request))
        else:
            raise Unauthorized("no token and no session")
        check_scope(principal, Scope.READ)
    except (Unauthorized, Forbidden) as exc:
        raise LoginRequired(safe_back_to(request.url.path)) from exc
    request.state.principal = principal
    return principal


def _session_principal(session: Session, secret: str, admin_token: str | None) -> Principal:
    """A live session's principal: not expired, not logged out, its token still valid (for
    the bootstrap admin token: still the one TIDEGATE_ADMIN_TOKEN holds)."""
    now = utcnow()
    row = session.scalar(
        select(UiSession).where(
            UiSession.secret_hash == hash_token(secret[:MAX_TOKEN_CHARS]),
            UiSession.revoked_at.is_(None),
            UiSession.expires_at > now,
        )
    )
    if row is None:
        raise Unauthorized("no such session")
    if row.token_id is not None:
        token = session.get(ApiToken, row.token_id)
        if (
            token is None
            or token.revoked_at is not None
            or (token.expires_at is not None and token.expires_at <= now)
        ):
            raise Unauthorized("the session's token is no longer valid")
    elif not (
        admin_token
        and row.admin_token_hash
        and hmac.compare_digest(row.admin_token_hash, hash_token(admin_token))
    ):
        raise Unauthorized("the admin token the session logged in with was rotated")
    return Principal(name=row.principal, scope=Scope(row.scope), token_id=row.token_id)


def open_session(request: Request, session: Session, principal: Principal) -> str:
    """A new session for ``principal``; returns the secret its cookie carries."""
    secret = "tgui_" + secrets.token_urlsafe(32)
    admin = _admin_token(request) if principal.token_id is None else None
    session.add(
        UiSession(
            secret_hash=hash_token(secret),
            principal=principal.name,
            scope=principal.scope.value,
            token_id=principal.token_id,
            admin_token_hash=hash_token(admin) if admin else None,
            expires_at=utcnow() + timedelta(hours=SESSION_HOURS),
        )
    )
    return secret


def close_session(request: Request, session: Session) -> None:
    """Logout: the session ends on the server, not only in this browser."""
    cookie = request.cookies.get(COOKIE)
    if cookie:
        session.execute(
            update(UiSession)
            .where(UiSession.secret_hash == hash_token(cookie[:MAX_TOKEN_CHARS]))
            .values(revoked_at=utcnow())
        )


def csrf_token(request: Request) -> str:
    """The login form's CSRF token: the browser's, or a new one (set by ``remember_csrf``)."""
    current = request.cookies.get(CSRF_COOKIE, "")
    return current if 20 <= len(current) <= 64 and current.isascii() else secrets.token_urlsafe(24)


def remember_csrf(request: Request, response: Response, token: str) -> None:
    response.set_cookie(
        CSRF_COOKIE,
        token,
        path=UI_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def check_csrf(request: Request, sent: str) -> None:
    """A login must come from this site's own form: the hidden field matches the cookie, and
    a browser's Origin, when it sends one, is this site."""
    origin = request.headers.get("origin")
    if origin and origin != "null":
        here = f"{request.url.scheme}://{request.url.netloc}"
        parts = urlsplit(origin)
        if f"{parts.scheme}://{parts.netloc}" != here:
            raise LoginRefused("A login from another site is refused.", 403)
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if not cookie or not sent or not hmac.compare_digest(cookie.encode(), sent.encode()):
        raise LoginRefused(
            "The login form has expired or did not come from this site: log in again.", 403
        )


def check_login(request: Request, session: Session, token: str) -> Principal:
    """The pasted token, checked exactly as the API checks a bearer token."""
    token = token.strip()
    if not token or len(token) > MAX_TOKEN_CHARS or not token.isprintable():
        raise LoginRefused("Paste a tidegate API token (it starts with 'tg_').", 401)
    try:
        principal = authenticate(session, f"Bearer {token}", _admin_token(request))
        check_scope(principal, Scope.READ)
    except Unauthorized as exc:
        raise LoginRefused("That token is unknown, revoked or expired.", 401) from exc
    except Forbidden as exc:
        raise LoginRefused(
            "That token cannot read jobs: the status page needs scope 'read' or higher "
            "(tidegate tokens issue --scope read).",
            403,
        ) from exc
    return principal


def safe_back_to(path: str | None) -> str:
    """Only a page of /ui itself: never an open redirect to another site."""
    if path and path.startswith(UI_PATH) and not path.startswith("//") and "\\" not in path:
        return path
    return UI_PATH


def login_url(back_to: str) -> str:
    return f"{UI_PATH}/login?" + urlencode({"next": back_to})


def remember(request: Request, response: Response, secret: str) -> None:
    response.set_cookie(
        COOKIE,
        secret,
        max_age=SESSION_HOURS * 3600,
        path=UI_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def forget(response: Response) -> None:
    response.delete_cookie(COOKIE, path=UI_PATH, httponly=True, samesite="strict")
