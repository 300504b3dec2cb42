"""The embedded PostgreSQL as root (issue 53): it runs as an unprivileged user, and the stop at
the exit of the process that started it is ``pg_ctl stop`` run as that user, clean the first
time: no error on the terminal, the server stopped by pg_ctl and not killed, whatever closed
DATA_DIR while it ran. Without the whole stack: a process starts the server and exits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.e2e import processes_mentioning
from tests.support.stack import ROOT

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="as root only: another user's server runs as that user, and pg_ctl with it",
)

# A process that starts the embedded server under DATA_DIR (made first and private, as every
# tidegate process makes it) and exits; with a mode, DATA_DIR is set to it before the exit.
START_AND_EXIT = """
import sys
from pathlib import Path

from app.core.embedded import embedded_database_url
from app.core.paths import private_dir

data = private_dir(Path(sys.argv[1]))
embedded_database_url(data)
print(oct(data.stat().st_mode & 0o777), flush=True)
if len(sys.argv) > 2:
    data.chmod(int(sys.argv[2], 8))
"""


def _start_and_exit(data: Path, *mode: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDEGATE_")}
    return subprocess.run(
        [sys.executable, "-c", START_AND_EXIT, str(data), *mode],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _stopped_cleanly(data: Path, done: subprocess.CompletedProcess[str], starts: int = 1) -> None:
    assert done.returncode == 0, done.stderr
    # Nothing on the terminal: no failed pg_ctl, no kill.
    assert done.stderr == "", done.stderr
    server_log = (data / "logs" / "embedded-postgres.log").read_text()
    assert "Failed" not in server_log and "killing" not in server_log, server_log
    # Each start ended with pg_ctl stop, which stopped the server.
    stops = [
        line
        for line in server_log.splitlines()
        if "Successful postgres command" in line and "'stop')" in line
    ]
    assert len(stops) == starts, server_log
    assert (data / "pg" / "log").read_text().count("database system is shut down") == starts
    assert processes_mentioning(str(data / "pg")) == []


def test_the_first_start_as_root_stops_cleanly_by_pg_ctl(tmp_path: Path) -> None:
    data = tmp_path / "first" / ".tidegate"  # nothing there yet: the first `make run`
    done = _start_and_exit(data)
    assert done.stdout.strip() == "0o711"  # search only for others, the postgres user's way in
    _stopped_cleanly(data, done)
    # A second start on the same DATA_DIR stops as cleanly.
    _stopped_cleanly(data, _start_and_exit(data), starts=2)


def test_the_stop_reaches_pg_even_when_data_dir_was_closed_meanwhile(tmp_path: Path) -> None:
    """DATA_DIR made 0700 while the server runs kept ``pg_ctl stop``, run as the server's
    user, out of ``pg/``: "could not access directory …/pg: Permission denied", then a kill."""
    data = tmp_path / "closed" / ".tidegate"
    done = _start_and_exit(data, "700")
    _stopped_cleanly(data, done)
    assert data.stat().st_mode & 0o777 == 0o711
