"""The test stacks' helper processes (APIs, workers) end when the test process is killed, so a
killed CI run leaves nothing polling on the machine for the next one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import psutil

from tests.support.waiting import wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    from tests.support.waiting import ends_with_the_tests
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"],
        preexec_fn=ends_with_the_tests,
    )
    print(child.pid, flush=True)
    time.sleep(120)
    """
)


def test_a_helper_ends_when_the_test_process_is_killed() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        child = psutil.Process(int(parent.stdout.readline()))
        assert child.is_running()

        parent.send_signal(signal.SIGKILL)
        parent.wait(10)

        gone = wait_for(
            lambda: not child.is_running() or child.status() == psutil.STATUS_ZOMBIE,
            until=bool,
            timeout=10,
            every=0.05,
            what="the helper to end with its parent",
        )
        assert gone
    finally:
        if parent.poll() is None:
            parent.kill()
