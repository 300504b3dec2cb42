"""The one-driver invariant watched while it must hold, not checked after the fact: a thread
samples the process table every 100 ms for the whole scenario and keeps the first sample in
which a run had more than one live driver."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import psutil

TAG = re.compile(r"^tidegate-run-(\d+)-a(\d+)$")


def drivers_by_run(runs: range) -> dict[int, list[tuple[int, str]]]:
    """(pid, tag) of every live driver of the runs in ``runs``, by run id. A driver is a
    spark-submit JVM, not a child it forked: between fork and exec such a child still shows
    its parent's command line (the fix of ``spark_submit_processes``, kept here in a leaner
    scan — command lines and parents only — that fits in the sampling period)."""
    matches: dict[int, tuple[int, int, str]] = {}  # pid -> (parent, run, tag)
    for proc in psutil.process_iter(["cmdline", "ppid", "status"]):
        args = proc.info["cmdline"] or []
        if proc.info["status"] == psutil.STATUS_ZOMBIE or "--name" not in args:
            continue
        if not any("SparkSubmit" in a for a in args):
            continue
        at = args.index("--name") + 1
        match = TAG.match(args[at]) if at < len(args) else None
        if match and int(match.group(1)) in runs:
            matches[proc.pid] = (proc.info["ppid"], int(match.group(1)), args[at])
    found: dict[int, list[tuple[int, str]]] = {}
    for pid, (parent, run_id, tag) in matches.items():
        if parent not in matches:
            found.setdefault(run_id, []).append((pid, tag))
    return found


@dataclass
class DriverSampler:
    """Samples ``drivers_by_run(runs)`` every ``every`` seconds until stopped."""

    runs: range
    every: float = 0.1
    samples: int = 0
    most: int = 0  # the most live drivers one run had in a sample
    broken: str | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _started: float = field(default_factory=time.monotonic)

    def sample(self) -> None:
        try:
            drivers = drivers_by_run(self.runs)
        except psutil.Error:  # a process vanished mid-scan: sample again next tick
            return
        self.samples += 1
        for run_id, live in drivers.items():
            self.most = max(self.most, len(live))
            if len(live) > 1 and self.broken is None:
                self.broken = (
                    f"sample {self.samples} at +{time.monotonic() - self._started:.2f}s: "
                    f"run {run_id} had {len(live)} live drivers {sorted(live)}"
                )

    def loop(self) -> None:
        """On a fixed schedule (a slow scan is not followed by a full period's wait)."""
        due = time.monotonic()
        while not self._stop.is_set():
            self.sample()
            due = max(due + self.every, time.monotonic())
            self._stop.wait(due - time.monotonic())

    def summary(self) -> str:
        took = time.monotonic() - self._started
        period = f"{took / max(self.samples, 1) * 1000:.0f} ms"
        return (
            f"{self.samples} samples in {took:.0f}s (one per {period}; due every "
            f"{self.every * 1000:.0f} ms), at most {self.most} driver(s) per run"
        )


@contextmanager
def one_driver_per_run(runs: range, every: float = 0.1) -> Iterator[DriverSampler]:
    """Watch ``runs`` while the block runs; fail with the breaking sample when any run had
    two live drivers at one instant."""
    sampler = DriverSampler(runs, every)
    thread = threading.Thread(target=sampler.loop, name="driver-sampler", daemon=True)
    thread.start()
    try:
        yield sampler
    finally:
        sampler._stop.set()
        thread.join(10)
    assert sampler.samples > 0, "the driver sampler took no sample"
    assert sampler.broken is None, f"two drivers of one run at once: {sampler.broken}"
