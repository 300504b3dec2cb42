"""`tidegate spark up --detach` / `status` / `down`: a real master and worker from pyspark's
distribution, found again from the work dir, and nothing left running after `down`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.e2e import processes_mentioning
from tests.support.stack import ROOT, wait_until

pytestmark = pytest.mark.e2e


def _tidegate(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "TIDEGATE_LOG_JSON": "false"}
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "spark", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_spark_up_status_down(tmp_path: Path) -> None:
    work = str(tmp_path / "spark")
    ports = ["--master-port", "0", "--rest-port", "0", "--ui-port", "0"]
    up = _tidegate("up", "--work-dir", work, *ports, "--cores", "1", "--memory", "512m", "--detach")
    try:
        assert up.returncode == 0, up.stderr
        urls = dict(line.split("=", 1) for line in up.stdout.splitlines() if "=" in line)
        assert urls["master_url"].startswith("spark://127.0.0.1:")
        status = _tidegate("status", "--work-dir", work)
        assert status.returncode == 0 and urls["rest_url"] in status.stdout, status
        # The REST submission server answers, and the master sees one live worker.
        ready = httpx.get(f"{urls['rest_url']}/v1/submissions/readyz", timeout=10)
        assert ready.status_code == 200, ready.text
        master = wait_until(
            lambda: httpx.get(f"{urls['ui_url']}/json/", timeout=10).json(),
            lambda state: state.get("aliveworkers") == 1,
            60,
        )
        assert master["status"] == "ALIVE"
    finally:
        down = _tidegate("down", "--work-dir", work)
    assert down.returncode == 0 and "stopped" in down.stdout, down
    wait_until(lambda: processes_mentioning(work), lambda found: found == [], 30)
    gone = _tidegate("status", "--work-dir", work)
    assert gone.returncode == 1 and "no cluster is running" in gone.stdout
    assert "no cluster was running" in _tidegate("down", "--work-dir", work).stdout
