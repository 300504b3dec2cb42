"""The status page in a real headless Chromium (Debian's chromium + chromium-driver) against a
real API with real data: a person logs in through the form, opens the jobs page and a job's
page; screenshots of both are kept under test-artifacts/ui/, and every figure the test reads
off the page equals what the JSON API returns for the same object."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from app.auth.service import Scope, create_token
from app.core.db import make_engine, make_sessionmaker, transaction, utcnow
from app.jobs.models import Job
from app.operations.models import Operation
from app.runs import service as runs
from app.runs.models import Run
from app.snapshots.models import Snapshot
from tests.conftest import ADMIN_TOKEN
from tests.support.api import version_body
from tests.support.stack import ROOT, Stack, running_stack

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTIFACTS = ROOT / "test-artifacts" / "ui"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",  # root on these machines
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1800",
)


def _missing_binaries() -> list[str]:
    return [path for path in (CHROMIUM, CHROMEDRIVER) if not shutil.which(path)]


@pytest.fixture
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    missing = _missing_binaries()
    if missing:
        pytest.skip(
            f"{' and '.join(missing)} not installed: apt-get install -y chromium chromium-driver"
        )
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    monkeypatch.setenv("SE_OFFLINE", "true")  # Selenium Manager must never download a browser
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def own_stack(tmp_path: Path) -> Iterator[Stack]:
    """An API of its own, without workers: the session's stack has a worker that would
    reconcile this test's runs (their cluster is not real) while the page is read."""
    (tmp_path / "stack").mkdir()
    with running_stack(tmp_path / "stack") as stack:
        yield stack


def _seed(stack: Stack) -> dict[str, Any]:
    """A job with an ended run and a running one that reports progress through the runtime
    channel (as its driver does), a finished operation with steps, a snapshot and a
    TIMESTAMP startpoint."""
    job = f"ui-{uuid.uuid4().hex[:8]}"
    api = stack.client
    api.post("/clusters", json={"name": "ui-local", "kind": "livy", "url": "http://127.0.0.1:9"})
    assert api.post(
        "/jobs", json={"name": job, "description": "clicks <b>per</b> minute"}
    ).is_success
    body = version_body("ui-local")
    assert api.post(f"/jobs/{job}/versions", json=body).status_code == 201
    engine = make_engine(stack.database_url, pool_size=1)
    try:
        with transaction(make_sessionmaker(engine)) as session:
            row = session.scalars(select(Job).where(Job.name == job)).one()
            made = []
            for _ in range(2):
                run = Run(
                    job_id=row.id,
                    version_id=row.versions[0].id,
                    state="submitting",
                    created_by="ui-test",
                    progress={},
                )
                session.add(run)
                session.flush()
                row.current_run_id = run.id
                runs.transition(session, run, "running", reason="driver up")
                made.append(run)
            old, current = made
            runs.transition(session, old, "stopping", reason="stop requested")
            runs.transition(session, old, "stopped", reason="stopped at a batch boundary")
            _, run_token = create_token(session, name="ui-run", scope=Scope.RUN, run_id=current.id)
            started = utcnow() - timedelta(seconds=9)
            op = Operation(
                job_id=row.id,
                kind="snapshot",
                state="succeeded",
                params={"name": "before-v2", "stop": False},
                request_hash="seeded",
                run_id=current.id,
                steps=[
                    {"name": "reserve", "at": (started + timedelta(seconds=1)).isoformat()},
                    {"name": "export", "at": (started + timedelta(seconds=7)).isoformat()},
                ],
                created_by="ui-test",
                started_at=started,
                finished_at=started + timedelta(seconds=8),
            )
            session.add(op)
            session.add(
                Snapshot(
                    job_id=row.id,
                    name="before-v2",
                    state="ready",
                    run_id=current.id,
                    version_number=1,
                    size_bytes=123_456,
                    bytes_written=123_456,
                    file_count=12,
                    created_by="ui-test",
                    completed_at=utcnow(),
                )
            )
            current_id, old_id = current.id, old.id
    finally:
        engine.dispose()
    driver_auth = {"Authorization": f"Bearer {run_token}"}
    for batch, (end, latest) in enumerate([(100, 400), (250, 420), (400, 437)]):
        report = {
            "query": "events",
            "batch_id": batch,
            "num_input_rows": 150,
            "sources": [
                {
                    "description": "eventlog[s]",
                    "start_offset": {"0": end - 100, "1": end - 50},
                    "end_offset": {"0": end, "1": end + 5},
                    "latest_offset": {"0": latest, "1": latest + 9},
                }
            ],
            "state_operators": [{"operator_name": "stateStoreSave", "num_rows_total": 7}],
            "durations_ms": {"triggerExecution": 300 + 10 * batch},
        }
        r = api.post(f"/runs/{current_id}/progress", json=report, headers=driver_auth)
        assert r.status_code == 204, r.text
    r = api.put(
        f"/jobs/{job}/startpoints",
        json={"startpoints": [{"source": "events", "type": "TIMESTAMP", "value": 1795443607000}]},
    )
    assert r.status_code == 200, r.text
    return {"job": job, "runs": [current_id, old_id]}


def _expected_backlog(progress: dict[str, Any]) -> int:
    """latestOffset - endOffset per source and partition, summed, from the API's run."""
    return sum(
        source["latest_offset"][p] - source["end_offset"][p]
        for report in progress.values()
        for source in report["sources"]
        for p in source["latest_offset"]
    )


def _screenshot(driver: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, max(int(height) + 40, 600))
    assert driver.save_screenshot(str(path)), path
    print(f"screenshot: {path}")
    return path


def _shown(browser: Any, element_id: str) -> Any:
    """The element once the page that has it is loaded: a click that submits a form returns
    before the next page is there."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    located = expected_conditions.presence_of_element_located((By.ID, element_id))
    return WebDriverWait(browser, 30).until(located)


def test_status_page_in_chromium_shows_what_the_api_says(own_stack: Stack, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    stack = own_stack
    seeded = _seed(stack)
    job, api = seeded["job"], stack.client
    # No token yet: the page sends the person to the form, which takes one.
    browser.get(f"{stack.url}/ui")
    assert "/ui/login" in browser.current_url
    browser.find_element(By.ID, "token").send_keys("tg_wrong")
    browser.find_element(By.ID, "login").click()
    assert "unknown, revoked or expired" in _shown(browser, "login-error").text
    browser.find_element(By.ID, "token").send_keys(ADMIN_TOKEN)
    browser.find_element(By.ID, "login").click()
    _shown(browser, "jobs")
    assert browser.current_url == f"{stack.url}/ui"
    assert ADMIN_TOKEN not in browser.current_url

    # The jobs page: state, current run and backlog of every job shown, as the API has them.
    api_jobs = {j["name"]: j for j in api.get("/jobs", params={"limit": 50}).json()["items"]}
    rows = browser.find_elements(By.CSS_SELECTOR, "#jobs tbody tr[data-job]")
    assert job in [r.get_attribute("data-job") for r in rows]
    for row in rows:
        expected = api_jobs[row.get_attribute("data-job")]
        assert row.find_element(By.CSS_SELECTOR, "[data-state]").text == expected["state"]
        run_cell = row.find_element(By.CSS_SELECTOR, "[data-run]").text
        assert run_cell == str(expected["current_run_id"] or "-")
    current = api.get(f"/runs/{seeded['runs'][0]}").json()
    mine = browser.find_element(By.CSS_SELECTOR, f'#jobs tr[data-job="{job}"]')
    backlog = _expected_backlog(current["progress"])
    assert backlog == (437 - 400) + (446 - 405)
    assert mine.find_element(By.CSS_SELECTOR, "[data-backlog]").text == str(backlog)
    assert mine.find_elements(By.CSS_SELECTOR, "svg.spark polyline")
    jobs_shot = _screenshot(browser, "jobs.png")

    # The job's page.
    mine.find_element(By.LINK_TEXT, job).click()
    assert _shown(browser, "job-description").text == "clicks <b>per</b> minute"
    api_runs = api.get(f"/jobs/{job}/runs").json()["items"]
    page_runs = browser.find_elements(By.CSS_SELECTOR, "#runs tr[data-run-id]")
    assert [
        (int(r.get_attribute("data-run-id")), r.find_element(By.CSS_SELECTOR, "[data-state]").text)
        for r in page_runs
    ] == [(r["id"], r["state"]) for r in api_runs]
    for page_run, api_run in zip(page_runs, api_runs, strict=True):
        assert page_run.find_element(By.CSS_SELECTOR, "[data-attempt]").text == str(
            api_run["attempt"]
        )
        for t in api.get(f"/runs/{api_run['id']}").json()["transitions"]:
            assert f"→ {t['to_state']}" in page_run.text
    panel = browser.find_element(By.CSS_SELECTOR, '[data-query="events"]')
    latest = current["progress"]["events"]
    assert panel.find_element(By.CSS_SELECTOR, "[data-batch]").text == str(latest["batch_id"])
    assert panel.find_element(By.CSS_SELECTOR, "[data-backlog]").text == str(backlog)
    # backlog, input rows, batch ms and rows dropped late (docs/late-data.md)
    assert len(panel.find_elements(By.CSS_SELECTOR, "svg.spark polyline")) == 4
    assert panel.find_element(By.CSS_SELECTOR, "[data-dropped-late]").text == str(
        latest.get("rows_dropped_late_total", 0)
    )

    (api_op,) = api.get(f"/jobs/{job}/operations").json()["items"]
    op_row = browser.find_element(
        By.CSS_SELECTOR, f'#operations tr[data-operation-id="{api_op["id"]}"]'
    )
    steps = op_row.find_elements(By.CSS_SELECTOR, "[data-step]")
    assert [s.get_attribute("data-step") for s in steps] == [s["name"] for s in api_op["steps"]]
    assert ["1.0 s" in steps[0].text, "6.0 s" in steps[1].text] == [True, True]

    api_snaps = api.get("/snapshots", params={"job": job}).json()["items"]
    page_snaps = browser.find_elements(By.CSS_SELECTOR, "#snapshots tr[data-snapshot]")
    assert [
        (s.get_attribute("data-snapshot"), int(s.find_element(By.CSS_SELECTOR, "[data-size]").text))
        for s in page_snaps
    ] == [(s["name"], s["size_bytes"]) for s in api_snaps]
    (pending,) = api.get(f"/jobs/{job}/startpoints").json()["pending"]
    sp_row = browser.find_element(
        By.CSS_SELECTOR, f'#startpoints tr[data-startpoint-id="{pending["id"]}"]'
    )
    assert "2026-11-23T14:20:07Z" in sp_row.text and str(pending["value"]) not in sp_row.text
    job_shot = _screenshot(browser, "job.png")
    assert jobs_shot.stat().st_size > 0 and job_shot.stat().st_size > 0

    # Logging out forgets the token.
    browser.find_element(By.CSS_SELECTOR, "header form button").click()
    _shown(browser, "token")  # the login form the logout leads to
    browser.get(f"{stack.url}/ui")
    assert "/ui/login" in browser.current_url
    assert os.path.exists(jobs_shot)
