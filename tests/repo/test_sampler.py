"""The one-driver sampler itself: it fails with the sample that held two drivers of a run,
and does not count a driver's forked child (same command line, before its exec)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.support.chaos.sampler import drivers_by_run, one_driver_per_run
from tests.support.waiting import wait_for

RUN = 987_654_321  # far from any stack's run ids
# Looks like a driver: a command line with SparkSubmit and --name <tag>. With fork=1 it
# also forks a child that keeps the same command line (as a JVM's helper does before exec).
FAKE = (
    "import os, sys, time\n"
    "if sys.argv[-1] == '1' and os.fork() == 0:\n"
    "    time.sleep(60); os._exit(0)\n"
    "time.sleep(60)\n"
)


@contextmanager
def fake_driver(attempt: int, fork: bool = False) -> Iterator[subprocess.Popen[bytes]]:
    tag = f"tidegate-run-{RUN}-a{attempt}"
    argv = [sys.executable, "-c", FAKE, "org.apache.spark.deploy.SparkSubmit", "--name", tag]
    proc = subprocess.Popen([*argv, "1" if fork else "0"], start_new_session=True)
    try:
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def _count() -> int:
    return len(drivers_by_run(range(RUN, RUN + 1)).get(RUN, []))


def test_two_live_drivers_of_one_run_fail_with_the_sample() -> None:
    with (
        pytest.raises(AssertionError, match=rf"run {RUN} had 2 live drivers"),
        one_driver_per_run(range(RUN, RUN + 1)) as sampler,
        fake_driver(0),
        fake_driver(1),
    ):
        wait_for(lambda: sampler.broken, bool, 20, 0.05, what="a sample with both")


def test_a_forked_child_is_not_a_second_driver() -> None:
    with one_driver_per_run(range(RUN, RUN + 1)) as sampler, fake_driver(0, fork=True) as proc:
        import psutil

        wait_for(
            lambda: psutil.Process(proc.pid).children(),
            bool,
            20,
            0.05,
            what="the fake driver's fork",
        )
        wait_for(lambda: sampler.samples, lambda n: n >= 5, 20, 0.05, what="five samples")
        assert _count() == 1
    assert sampler.most == 1
