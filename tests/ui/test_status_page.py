"""The status page at /ui: who may read it (a token pasted once, kept in a cookie, never in a
URL), what it shows and that it escapes what jobs carry."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import Engine, text

from app.api.main import create_app
from tests.conftest import ADMIN_TOKEN
from tests.support.api import make_current_run, version_body

HOSTILE = "<script>alert('x')</script><img src=x onerror=alert(1)>"


def _browser(client: TestClient) -> TestClient:
    """A client with no Authorization header, as a browser is."""
    return TestClient(client.app, follow_redirects=False)  # type: ignore[arg-type]


def _login(browser: TestClient, token: str, next: str | None = None) -> Any:
    """Log in as a person does: load the form (its CSRF token), then send it."""
    form = browser.get("/ui/login")
    match = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert match, form.text
    data = {"token": token, "csrf": match.group(1)}
    if next is not None:
        data["next"] = next
    return browser.post("/ui/login", data=data)


def _job_with_progress(client: TestClient, db: Engine, name: str = "clicks") -> int:
    assert client.post("/api/v1/jobs", json={"name": name, "description": HOSTILE}).status_code
    assert client.post(f"/api/v1/jobs/{name}/versions", json=version_body()).status_code == 201
    run_id, token = make_current_run(db, name)
    for batch, (end, latest) in enumerate([(10, 40), (30, 45), (45, 52)]):
        report = {
            "query": "events",
            "batch_id": batch,
            "num_input_rows": 10,
            "sources": [
                {"end_offset": {"0": end, "1": end}, "latest_offset": {"0": latest, "1": latest}}
            ],
            "state_operators": [
                # rows behind the watermark: 4 in batch 1, 5 in batch 2
                {
                    "operator_name": "stateStoreSave",
                    "num_rows_total": 3,
                    "num_rows_dropped_by_watermark": [0, 4, 5][batch],
                }
            ],
            "durations_ms": {"triggerExecution": 100 + batch},
        }
        r = client.post(
            f"/api/v1/runs/{run_id}/progress",
            json=report,
            headers={"Authorization": f"Bearer {token}"},
        )
        assert r.status_code == 204, r.text
    failure = {"attempt": 0, "query": "events", "failures": 1, "error": HOSTILE}
    r = client.post(
        f"/api/v1/runs/{run_id}/query-failures",
        json={**failure, "restart_in_seconds": 30},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert r.status_code < 300, r.text
    return run_id


def test_no_token_is_sent_to_the_login_form(client: TestClient, cluster: str) -> None:
    browser = _browser(client)
    for path in ("/ui", "/ui/jobs/clicks"):
        r = browser.get(path)
        assert r.status_code == 303
        assert r.headers["location"] == f"/ui/login?next={path.replace('/', '%2F')}"
    form = browser.get("/ui/login?next=%2Fui%2Fjobs%2Fclicks")
    assert form.status_code == 200 and 'name="token"' in form.text
    assert 'value="/ui/jobs/clicks"' in form.text
    # A bad cookie is no better than none.
    browser.cookies.set("tidegate_ui_session", "tgui_not_a_session", path="/ui")
    assert browser.get("/ui").status_code == 303


def test_login_refuses_bad_and_run_tokens_and_accepts_read(
    client: TestClient, db: Engine, cluster: str, token_for: Callable[[str], str]
) -> None:
    browser = _browser(client)
    bad = _login(browser, "tg_wrong", "/ui")
    assert bad.status_code == 401 and "unknown, revoked or expired" in bad.text
    assert "tidegate_ui_session" not in bad.headers.get("set-cookie", "")
    assert "tg_wrong" not in bad.text
    client.post("/api/v1/jobs", json={"name": "clicks"})
    client.post("/api/v1/jobs/clicks/versions", json=version_body())
    _, run_token = make_current_run(db, "clicks")
    refused = _login(browser, run_token)
    assert refused.status_code == 403 and "cannot read jobs" in refused.text

    reader = token_for("read")
    ok = _login(browser, reader, "/ui/jobs/clicks")
    assert ok.status_code == 303 and ok.headers["location"] == "/ui/jobs/clicks"
    cookie = ok.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
    assert "Secure" not in cookie  # plain http here; https requests get Secure
    https = TestClient(client.app, base_url="https://testserver", follow_redirects=False)  # type: ignore[arg-type]
    assert "Secure" in _login(https, ADMIN_TOKEN).headers["set-cookie"]
    page = browser.get("/ui/jobs/clicks")
    assert page.status_code == 200 and "signed in as test-read (read)" in page.text
    assert "script-src" not in page.headers["content-security-policy"]  # default-src 'none'
    assert "<script" not in page.text

    assert reader not in cookie  # the browser holds a session, never the token

    out = browser.post("/ui/logout")
    assert out.status_code == 303 and 'tidegate_ui_session=""' in out.headers["set-cookie"]
    assert browser.get("/ui").status_code == 303


def test_the_header_works_and_next_never_leaves_the_page(
    client: TestClient, token_for: Callable[[str], str]
) -> None:
    browser = _browser(client)
    reader = {"Authorization": f"Bearer {token_for('read')}"}
    assert browser.get("/ui", headers=reader).status_code == 200
    for away in ("https://evil.example/", "//evil.example/ui", "/api/v1/jobs"):
        r = _login(browser, ADMIN_TOKEN, away)
        assert r.headers["location"] == "/ui", away


def test_pages_escape_and_show_the_apis_figures(
    client: TestClient, db: Engine, cluster: str
) -> None:
    run_id = _job_with_progress(client, db)
    put = client.put(
        "/api/v1/jobs/clicks/startpoints",
        json={"startpoints": [{"source": "events", "type": "TIMESTAMP", "value": 1795443607000}]},
    )
    assert put.status_code == 200, put.text
    jobs = client.get("/ui").text
    job = client.get("/ui/jobs/clicks").text
    for html in (jobs, job):
        assert (
            HOSTILE not in html
            and "<script" not in html
            and "onerror=alert" not in html.replace("&lt;img src=x onerror=alert(1)&gt;", "")
        )
        assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    # backlog of the latest report: (52 - 45) * 2 partitions
    row = re.search(r'<tr data-job="clicks">.*?</tr>', jobs, re.S)
    assert row and re.search(r"data-backlog>14<", row.group(0)) and "<polyline" in row.group(0)
    api_run = client.get(f"/api/v1/runs/{run_id}").json()
    assert api_run["progress"]["events"]["batch_id"] == 2
    assert f'data-run-id="{run_id}"' in job and re.search(r"data-batch>2<", job)
    # Rows dropped as late, as the API counts them: on the run's row and the query's panel.
    assert api_run["progress"]["events"]["rows_dropped_late_total"] == 9
    run_row = re.search(rf'<tr data-run-id="{run_id}">.*?</tr>', job, re.S)
    assert run_row and re.search(r"data-dropped-late>9<", run_row.group(0))
    panel = job.split('data-query="events"', 1)[-1]
    assert re.search(r"data-dropped-late>9<", panel)
    assert re.search(r"data-dropped-late-batch>5<", panel) and "dropped late: last 5" in panel
    # The query the driver restarted alone, on its run's row.
    restarted = re.search(
        r'<div class="query-restarts" data-query-restarts="events">.*?</div>', job, re.S
    )
    assert restarted and re.search(r"data-restarts>1<", restarted.group(0))
    assert "restarts at <time>" in restarted.group(0) and "&lt;script&gt;" in restarted.group(0)
    # `date -u -d @1795443607`: the TIMESTAMP startpoint's epoch ms, as people read it
    assert "2026-11-23T14:20:07Z" in job and "1795443607000" not in job
    # Every time is ISO-8601 UTC.
    assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", job)


def test_unknown_job_and_openapi(client: TestClient, db: Engine) -> None:
    missing = client.get("/ui/jobs/<nope>")
    assert missing.status_code == 404 and "No job named &#39;&lt;nope&gt;&#39;" in missing.text
    assert client.get("/ui?cursor=junk").status_code == 400
    paths = create_app(client.app.state.settings, engine=db).openapi()["paths"]  # type: ignore[attr-defined]
    assert not [p for p in paths if p.startswith("/ui")]


def test_sessions_end_at_logout_expiry_and_revocation_and_logins_need_this_site(
    client: TestClient, db: Engine, token_for: Callable[[str], str]
) -> None:
    """Issue 26, #7: the cookie was the raw token, never expired, outlived logout, and a
    cross-site POST could log a browser in."""
    browser = _browser(client)
    # Another site's form: no CSRF token of ours, a foreign Origin.
    forged = browser.post(
        "/ui/login",
        data={"token": ADMIN_TOKEN, "csrf": "made-up-by-another-site-000"},
        headers={"Origin": "https://evil.example"},
    )
    assert forged.status_code == 403 and "another site" in forged.text
    assert "tidegate_ui_session" not in forged.headers.get("set-cookie", "")
    no_csrf = browser.post("/ui/login", data={"token": ADMIN_TOKEN})
    assert no_csrf.status_code == 403 and "tidegate_ui_session" not in str(no_csrf.headers)

    # Logout ends the session on the server: a copy of the cookie is refused too.
    assert _login(browser, token_for("read")).status_code == 303
    stolen = _browser(client)
    stolen.cookies.set("tidegate_ui_session", browser.cookies["tidegate_ui_session"], path="/ui")
    assert stolen.get("/ui").status_code == 200
    browser.post("/ui/logout")
    assert stolen.get("/ui").status_code == 303

    # Revoking the token ends its sessions.
    other = _browser(client)
    secret = token_for("read")
    assert _login(other, secret).status_code == 303 and other.get("/ui").status_code == 200
    tokens = client.get("/api/v1/tokens").json()
    token_id = next(t["id"] for t in tokens if secret.startswith(t["prefix"]) and t["prefix"])
    assert client.delete(f"/api/v1/tokens/{token_id}").status_code == 204
    assert other.get("/ui").status_code == 303

    # A session ends by itself.
    late = _browser(client)
    assert _login(late, ADMIN_TOKEN).status_code == 303 and late.get("/ui").status_code == 200
    with db.begin() as conn:
        conn.execute(text("update ui_sessions set expires_at = now() - interval '1 second'"))
    assert late.get("/ui").status_code == 303


def test_a_rotated_admin_token_ends_the_sessions_it_opened(
    client: TestClient, db: Engine, settings: Any, token_for: Callable[[str], str]
) -> None:
    """Issue 51 L5: a session opened with the bootstrap admin token lived on for up to 8 h
    after TIDEGATE_ADMIN_TOKEN was rotated; it now ends with the rotation. Sessions of stored
    tokens are theirs to end (revocation), not the admin token's."""
    admin = _browser(client)
    reader = _browser(client)
    assert _login(admin, ADMIN_TOKEN).status_code == 303 and admin.get("/ui").status_code == 200
    assert _login(reader, token_for("read")).status_code == 303
    rotated = settings.model_copy(update={"admin_token": SecretStr("b" + ADMIN_TOKEN[1:])})
    with TestClient(create_app(rotated, engine=db), follow_redirects=False) as after:
        after.cookies.set("tidegate_ui_session", admin.cookies["tidegate_ui_session"], path="/ui")
        assert after.get("/ui").status_code == 303  # sent to log in again
        after.cookies.set("tidegate_ui_session", reader.cookies["tidegate_ui_session"], path="/ui")
        assert after.get("/ui").status_code == 200
    assert admin.get("/ui").status_code == 200  # the same token still: the same session
