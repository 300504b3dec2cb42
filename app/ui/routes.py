"""The status page's routes: thin; app.ui.views builds what they show."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs

import jinja2
from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from app.auth.service import Principal
from app.core.deps import DbSession
from app.core.errors import BadRequest, NotFound
from app.core.pagination import Cursor
from app.core.params import JobName
from app.ui import access, views
from app.ui.figures import epoch_ms, human_bytes, iso, run_rows_dropped_late

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True,  # every value a job, run or token carries is escaped
    undefined=jinja2.StrictUndefined,
)
_env.filters.update(
    iso=iso, epoch_ms=epoch_ms, bytes=human_bytes, dropped_late=run_rows_dropped_late
)
templates = Jinja2Templates(env=_env)

# No script may run: the page has none, and a value that slipped through escaping could not.
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

router = APIRouter(prefix=access.UI_PATH, include_in_schema=False, tags=["ui"])


def _reader(request: Request, session: DbSession) -> Principal:
    return access.reader(request, session)


Reader = Annotated[Principal, Depends(_reader)]


def _page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    return templates.TemplateResponse(
        request, template, context, status_code=status_code, headers=HEADERS
    )


async def _form(request: Request) -> dict[str, str]:
    """A urlencoded form's first value per field (the login form has two)."""
    body = (await request.body())[: 16 * 1024].decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(body, max_num_fields=10).items()}


LoginForm = Annotated[dict[str, str], Depends(_form)]


@router.get("", response_class=HTMLResponse, name="ui.jobs")
def jobs_page(request: Request, session: DbSession, who: Reader, cursor: Cursor = None) -> Response:
    try:
        page = views.jobs_page(session, cursor)
    except BadRequest as exc:  # a cursor this page did not hand out
        return _page(request, "error.html", exc.status, message=exc.detail, who=who)
    return _page(request, "jobs.html", page=page, who=who)


@router.get("/jobs/{job}", response_class=HTMLResponse, name="ui.job")
def job_page(request: Request, job: JobName, session: DbSession, who: Reader) -> Response:
    try:
        page = views.job_page(session, job)
    except NotFound:
        return _page(request, "error.html", 404, message=f"No job named '{job}'.", who=who)
    return _page(request, "job.html", page=page, who=who)


@router.get("/login", response_class=HTMLResponse, name="ui.login_form")
def login_form(
    request: Request, next: Annotated[str | None, Query(max_length=2048)] = None
) -> Response:
    return _login_page(request, 200, access.safe_back_to(next), None)


def _login_page(request: Request, status: int, back_to: str, error: str | None) -> Response:
    csrf = access.csrf_token(request)
    response = _page(request, "login.html", status, back_to=back_to, error=error, csrf=csrf)
    access.remember_csrf(request, response, csrf)
    return response


@router.post("/login", name="ui.login")
def login(request: Request, form: LoginForm, session: DbSession) -> Response:
    back_to = access.safe_back_to(form.get("next"))
    try:
        access.check_csrf(request, form.get("csrf", ""))
        principal = access.check_login(request, session, form.get("token", ""))
    except access.LoginRefused as refused:
        return _login_page(request, refused.status, back_to, refused.message)
    response = RedirectResponse(back_to, status_code=303, headers=HEADERS)
    access.remember(request, response, access.open_session(request, session, principal))
    return response


@router.post("/logout", name="ui.logout")
def logout(request: Request, session: DbSession) -> Response:
    access.close_session(request, session)
    response = RedirectResponse(f"{access.UI_PATH}/login", status_code=303, headers=HEADERS)
    access.forget(response)
    return response


def install(app: FastAPI) -> None:
    async def to_login(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, access.LoginRequired)
        return RedirectResponse(access.login_url(exc.back_to), status_code=303, headers=HEADERS)

    app.add_exception_handler(access.LoginRequired, to_login)
    app.include_router(router)
