"""The local runner runs code as its user, so only tidegate may drive it: a bearer token, a
loopback Host (no DNS rebinding), JSON writes only (no cross-site form), and drivers that do
not inherit the runner's secrets."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.runner.app import create_app
from tests.runner.test_runner_unit import TOKEN, _kill_leftovers, fake_submit  # noqa: F401

AUTH = {"Authorization": f"Bearer {TOKEN}"}
LOOPBACK = "http://127.0.0.1:8998"


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "state"
    _kill_leftovers(tmp_path / "state")


@pytest.fixture
def runner(state: Path, fake_submit: str) -> Iterator[TestClient]:  # noqa: F811
    app = create_app(state, token=TOKEN, spark_submit=fake_submit, kill_grace=2.0)
    with TestClient(app, base_url=LOOPBACK) as client:
        yield client


@pytest.fixture
def app_file(tmp_path: Path) -> str:
    path = tmp_path / "dump_env.py"
    path.write_text("import json, os\nprint('ENV ' + json.dumps(dict(os.environ)), flush=True)\n")
    return str(path)


def _no_batches(state: Path) -> bool:
    return not list(state.glob("batches/*/batch.json"))


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}, {"X-Requested-By": "x"}],
    ids=["none", "wrong", "no-scheme", "livy-csrf-header-only"],
)
def test_without_the_token_nothing_runs_or_lists(
    runner: TestClient, state: Path, app_file: str, headers: dict[str, str]
) -> None:
    r = runner.post("/batches", json={"file": app_file}, headers=headers)
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert TOKEN not in r.text
    assert runner.get("/batches", headers=headers).status_code == 401
    assert runner.delete("/batches/0", headers=headers).status_code == 401
    assert _no_batches(state)


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8998", "10.0.0.5:8998"])
def test_a_non_loopback_host_is_refused_dns_rebinding(
    runner: TestClient, state: Path, app_file: str, host: str
) -> None:
    r = runner.post("/batches", json={"file": app_file}, headers={**AUTH, "Host": host})
    assert r.status_code == 421
    assert _no_batches(state)
    for ok in ("127.0.0.1:8998", "localhost:8998", "[::1]:8998", "localhost"):
        assert runner.get("/batches", headers={**AUTH, "Host": ok}).status_code == 200


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", None])
def test_writes_must_be_json(
    runner: TestClient, state: Path, app_file: str, ctype: str | None
) -> None:
    body = json.dumps({"file": app_file}).encode()
    headers = {**AUTH, **({"Content-Type": ctype} if ctype else {})}
    r = runner.post("/batches", content=body, headers=headers)
    assert r.status_code == 415
    assert _no_batches(state)


def test_drivers_get_an_allow_listed_environment(
    runner: TestClient, app_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What `tidegate run` gives the runner process: none of it may reach driver code.
    monkeypatch.setenv("TIDEGATE_ADMIN_TOKEN", "tg_admin_joPuaoYSCfKMpfhqKhGIsyBaMtabl")
    monkeypatch.setenv("TIDEGATE_DATABASE_URL", "postgresql://u:dbpass@/tidegate")
    monkeypatch.setenv("TIDEGATE_RUNNER_TOKEN", TOKEN)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    monkeypatch.setenv("SPARK_LOCAL_DIRS", "/tmp/spark-local")
    conf = {"spark.yarn.appMasterEnv.TIDEGATE_RUN_TOKEN": "the-runs-own-token"}
    r = runner.post("/batches", json={"file": app_file, "conf": conf}, headers=AUTH)
    assert r.status_code == 201, r.text
    batch = r.json()["id"]
    deadline = time.monotonic() + 30
    lines: list[str] = []
    while not any(line.startswith("ENV ") for line in lines) and time.monotonic() < deadline:
        time.sleep(0.05)
        lines = runner.get(f"/batches/{batch}/log", headers=AUTH).json()["log"]
    env = json.loads(next(line for line in lines if line.startswith("ENV "))[4:])
    for secret in ("TIDEGATE_ADMIN_TOKEN", "TIDEGATE_DATABASE_URL", "TIDEGATE_RUNNER_TOKEN"):
        assert secret not in env
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert env["TIDEGATE_RUN_TOKEN"] == "the-runs-own-token"  # what the batch asked for
    assert env["SPARK_LOCAL_DIRS"] == "/tmp/spark-local" and "PATH" in env and "SPARK_HOME" in env
