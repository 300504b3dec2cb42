"""Who may read the status page. A browser cannot send a bearer header, so a person pastes a
token once into /ui/login and it comes back in an HttpOnly, SameSite=Strict cookie scoped to
/ui; the Authorization header still works for scripts. The token never goes into a URL."""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import Request, Response
from sqlalchemy.orm import Session

from app.auth.service import Principal, Scope, authenticate, check_scope
from app.core.errors import Forbidden, Unauthorized

COOKIE = "tidegate_ui_token"
UI_PATH = "/ui"
MAX_TOKEN_CHARS = 512


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
    """The page's reader from the Authorization header, else the cookie; read scope or above."""
    header = request.headers.get("authorization")
    cookie = request.cookies.get(COOKIE)
    authorization = header or (f"Bearer {cookie}" if cookie else None)
    try:
        principal = authenticate(session, authorization, _admin_token(request))
        check_scope(principal, Scope.READ)
    except (Unauthorized, Forbidden) as exc:
        raise LoginRequired(safe_back_to(request.url.path)) from exc
    request.state.principal = principal
    return principal


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


def remember(request: Request, response: Response, token: str) -> None:
    response.set_cookie(
        COOKIE,
        token.strip(),
        path=UI_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def forget(response: Response) -> None:
    response.delete_cookie(COOKIE, path=UI_PATH, httponly=True, samesite="strict")
