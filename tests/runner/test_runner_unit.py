"""The local runner with a stand-in spark-submit (a Python script that runs the app file
directly): process handling, persistence, kill, logs and validation, in seconds."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from fastapi.testclient import TestClient

from app.runner.app import create_app
from app.runner.batches import BatchManager, SubmitRequest

FAKE_SPARK_SUBMIT = f"""#!{sys.executable}
# Records its argv, then runs the app file like spark-submit would (options before the file).
import json, os, runpy, sys
args = sys.argv[1:]
opts = {{}}
while args and args[0].startswith("--"):
    opts[args[0]] = args[1]
    args = args[2:]
print("FAKE_SUBMIT " + json.dumps(opts), flush=True)
sys.argv = args
runpy.run_path(args[0], run_name="__main__")
"""


TOKEN = "tg_test_runner_token_0123456789abcdef"


@pytest.fixture
def fake_submit(tmp_path: Path) -> str:
    path = tmp_path / "bin" / "spark-submit"
    path.parent.mkdir()
    path.write_text(FAKE_SPARK_SUBMIT)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def make_app(tmp_path: Path) -> Callable[[str], Path]:
    def make(source: str) -> Path:
        path = tmp_path / f"app_{abs(hash(source))}.py"
        path.write_text(textwrap.dedent(source))
        return path

    return make


def _kill_leftovers(state: Path) -> None:
    """Whatever a failed test left running."""
    for record in state.glob("batches/*/batch.json"):
        pid = json.loads(record.read_text())["pid"]
        for leftover in _session(pid) if pid else []:
            with contextlib.suppress(psutil.Error):
                psutil.Process(leftover).kill()


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "state"
    _kill_leftovers(tmp_path / "state")


@pytest.fixture
def manager(state: Path, fake_submit: str) -> BatchManager:
    return BatchManager(state, python=sys.executable, spark_submit=fake_submit, kill_grace=2.0)


@pytest.fixture
def client(state: Path, fake_submit: str) -> Iterator[TestClient]:
    app = create_app(state, token=TOKEN, spark_submit=fake_submit, kill_grace=2.0)
    with TestClient(
        app, base_url="http://127.0.0.1:8998", headers={"Authorization": f"Bearer {TOKEN}"}
    ) as c:
        yield c


def _wait(fn: Callable[[], Any], until: Callable[[Any], bool], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if until(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def _session(sid: int) -> list[int]:
    alive = []
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getsid(proc.pid) == sid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                alive.append(proc.pid)
        except OSError:
            continue
    return alive


def test_lifecycle_starting_running_success_and_logs(
    client: TestClient, make_app: Callable[[str], Path]
) -> None:
    app = make_app("""
        import sys, time
        print("INFO SparkContext: Running Spark version 4.3.0", flush=True)
        for i in range(5):
            print(f"line {i}", flush=True)
        time.sleep(0.5)
    """)
    resp = client.post("/batches", json={"file": str(app), "name": "b1", "args": ["x"]})
    assert resp.status_code == 201, resp.text
    batch = resp.json()
    assert batch["state"] == "starting"
    assert set(batch) >= {"id", "name", "state", "appId", "appInfo", "log"}

    bid = batch["id"]
    running = _wait(
        lambda: client.get(f"/batches/{bid}/state").json()["state"], lambda s: s != "starting"
    )
    assert running == "running"
    final = _wait(lambda: client.get(f"/batches/{bid}").json(), lambda b: b["state"] == "success")
    assert final["state"] == "success"
    assert final["log"][-1] == "line 4"

    log = client.get(f"/batches/{bid}/log").json()
    assert log["total"] == 7 and log["from"] == 0
    assert json.loads(log["log"][0].removeprefix("FAKE_SUBMIT "))["--name"] == "b1"
    assert client.get(f"/batches/{bid}/log", params={"size": 2}).json() == {
        "id": bid,
        "from": 5,
        "total": 7,
        "log": ["line 3", "line 4"],
    }
    assert client.get(f"/batches/{bid}/log", params={"from": 2, "size": 2}).json()["log"] == [
        "line 0",
        "line 1",
    ]

    listing = client.get("/batches", params={"from": 0, "size": 10}).json()
    assert listing["from"] == 0 and listing["total"] == 1
    assert [s["name"] for s in listing["sessions"]] == ["b1"]


def test_nonzero_exit_is_dead(manager: BatchManager, make_app: Callable[[str], Path]) -> None:
    app = make_app("raise SystemExit(3)")
    batch = manager.submit(SubmitRequest(file=str(app)))
    done = _wait(lambda: manager.get(batch.id), lambda b: b.state in ("success", "dead"))
    assert (done.state, done.exit_code) == ("dead", 3)


def test_env_conf_and_secrets(
    manager: BatchManager, make_app: Callable[[str], Path], caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app("""
        import os
        print("ENV_FOO=" + os.environ.get("FOO", ""), flush=True)
    """)
    conf = {
        "spark.yarn.appMasterEnv.FOO": "bar baz",
        "spark.my.password": "hunter2",
        "spark.odd": "a=b:c #!\\\\ \n",
    }
    with caplog.at_level(logging.INFO, logger="app.runner"):
        batch = manager.submit(SubmitRequest(file=str(app), conf=conf))
        _wait(lambda: manager.get(batch.id), lambda b: b.state == "success")
    assert "ENV_FOO=bar baz" in manager.tail(batch.id, 5)
    folder = manager.root / str(batch.id)
    props = (folder / "spark.properties").read_text()
    assert "appMasterEnv" not in props
    assert "spark.my.password=hunter2" in props
    assert "spark.odd=a\\=b\\:c \\#\\!\\\\\\\\ \\n" in props
    assert stat.S_IMODE((folder / "spark.properties").stat().st_mode) == 0o600
    assert f"spark.pyspark.python={sys.executable}" in props
    assert "hunter2" not in caplog.text
    assert "hunter2" not in (folder / "batch.json").read_text()
    opts = json.loads(manager.tail(batch.id, 5)[0].removeprefix("FAKE_SUBMIT "))
    assert opts["--properties-file"] == str(folder / "spark.properties")


def test_kill_takes_the_whole_tree(
    client: TestClient, make_app: Callable[[str], Path], state: Path
) -> None:
    app = make_app("""
        import subprocess, time
        subprocess.Popen(["sleep", "300"])
        print("INFO SparkContext: Running Spark version 4.3.0", flush=True)
        time.sleep(300)
    """)
    bid = client.post("/batches", json={"file": str(app)}).json()["id"]
    _wait(lambda: client.get(f"/batches/{bid}/state").json()["state"], lambda s: s == "running")
    record = json.loads((state / "batches" / str(bid) / "batch.json").read_text())
    _wait(lambda: _session(record["pid"]), lambda pids: len(pids) >= 3)  # sh, python, sleep
    assert client.delete(f"/batches/{bid}").json() == {"msg": "deleted"}
    assert client.get(f"/batches/{bid}/state").json()["state"] == "killed"
    assert _session(record["pid"]) == []
    assert client.delete(f"/batches/{bid}").json() == {"msg": "deleted"}
    assert client.get(f"/batches/{bid}/state").json()["state"] == "killed"


def test_delete_keeps_the_final_state_of_an_ended_batch(
    client: TestClient, make_app: Callable[[str], Path]
) -> None:
    bid = client.post("/batches", json={"file": str(make_app("pass"))}).json()["id"]
    _wait(lambda: client.get(f"/batches/{bid}/state").json()["state"], lambda s: s == "success")
    client.delete(f"/batches/{bid}")
    assert client.get(f"/batches/{bid}/state").json()["state"] == "success"


def test_restart_sees_batches_that_ended_while_down(
    state: Path, fake_submit: str, make_app: Callable[[str], Path]
) -> None:
    first = BatchManager(state, spark_submit=fake_submit)
    quick = first.submit(
        SubmitRequest(file=str(make_app("import time; time.sleep(0.5)")), name="quick")
    )
    slow = first.submit(
        SubmitRequest(file=str(make_app("import time; time.sleep(300)")), name="slow")
    )
    del first
    _wait(lambda: (state / "batches" / str(quick.id) / "exit_code").exists(), bool)

    second = BatchManager(state, spark_submit=fake_submit, kill_grace=2.0)
    assert second.get(quick.id).state == "success"
    assert second.get(slow.id).state == "starting"
    total, batches = second.page()
    assert (total, [b.name for b in batches]) == (2, ["quick", "slow"])
    third = second.submit(SubmitRequest(file=str(make_app("pass"))))
    assert third.id == 2
    assert second.kill(slow.id).state == "killed"


def test_a_reused_pid_is_not_the_batch(
    manager: BatchManager, make_app: Callable[[str], Path]
) -> None:
    batch = manager.submit(SubmitRequest(file=str(make_app("import time; time.sleep(300)"))))
    record = manager.root / str(batch.id) / "batch.json"
    data = json.loads(record.read_text())
    data["create_time"] -= 1000  # as if the pid now belonged to another process
    record.write_text(json.dumps(data))
    other = BatchManager(manager.root.parent, spark_submit=manager.spark_submit)
    try:
        reloaded = other.get(batch.id)
        assert reloaded.state == "dead"
        assert reloaded.message and "without an exit code" in reloaded.message
    finally:
        manager.kill(batch.id)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"file": "relative.py"}, "absolute path"),
        ({"file": "/nonexistent/app.py"}, "does not exist"),
        ({"file": "file:/nonexistent/app.py"}, "does not exist"),
        ({"file": ""}, "file"),
        ({"args": []}, "file"),
        ({"file": "FILE", "bogus": 1}, "bogus"),
        ({"file": "FILE", "conf": {"spark.yarn.appMasterEnv.A-B": "x"}}, "environment variable"),
        ({"file": "FILE", "conf": {"spark.x": 1}}, "conf"),
        ({"file": "FILE", "pyFiles": ["/nonexistent/lib.zip"]}, "pyFiles"),
    ],
)
def test_bad_requests_are_400(
    client: TestClient, make_app: Callable[[str], Path], body: dict[str, Any], message: str
) -> None:
    if body.get("file") == "FILE":
        body = {**body, "file": str(make_app("pass"))}
    resp = client.post("/batches", json=body)
    assert resp.status_code == 400, resp.text
    assert message in resp.json()["msg"]


def test_remote_files_are_not_checked(client: TestClient) -> None:
    resp = client.post("/batches", json={"file": "hdfs://nn/app.py", "name": "remote"})
    assert resp.status_code == 201  # spark-submit will fetch (and here fail) it


def test_duplicate_name_and_unknown_ids(
    client: TestClient, make_app: Callable[[str], Path]
) -> None:
    app = str(make_app("pass"))
    assert client.post("/batches", json={"file": app, "name": "same"}).status_code == 201
    resp = client.post("/batches", json={"file": app, "name": "same"})
    assert resp.status_code == 400 and "Duplicate session name" in resp.json()["msg"]
    assert client.get("/batches/42").status_code == 404
    assert client.get("/batches/42/log").status_code == 404
    assert client.delete("/batches/42").status_code == 404
    assert client.get("/batches/abc").status_code == 400
