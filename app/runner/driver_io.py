"""What the runner's batches do with processes and files: the driver's allow-listed
environment, Java properties escaping, terminating a process tree, reading a log's lines."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import psutil

ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What a driver inherits from the runner's environment: what spark-submit, Java and Python
# need, nothing else. The runner's own environment may hold tidegate's secrets (under
# `tidegate run`: the admin token, the database URL, the runner token).
_INHERITED = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "JAVA_HOME", "PYTHONPATH"}
)
_INHERITED_PREFIXES = ("SPARK_", "PYSPARK_", "LC_", "HADOOP_", "YARN_")
_NEVER_INHERITED = ("TIDEGATE_",)


def driver_environment(parent: dict[str, str]) -> dict[str, str]:
    """The allow-listed part of ``parent`` a driver starts with."""
    return {
        key: value
        for key, value in parent.items()
        if (key in _INHERITED or key.startswith(_INHERITED_PREFIXES))
        and not key.startswith(_NEVER_INHERITED)
    }


def local_path(path: str) -> Path | None:
    """The local file a Spark path names, or None for a remote URL (hdfs:, s3a:, …)."""
    if path.startswith(("file://", "local://")):
        return Path(path.split("://", 1)[1])
    if path.startswith(("file:", "local:")):
        return Path(path.split(":", 1)[1])
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", path):
        return None
    return Path(path)


def properties_escape(text: str, *, key: bool = False) -> str:
    """Java ``.properties`` escaping (Spark reads the file as UTF-8)."""
    out = []
    for i, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch in "\n\r\t\f":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}[ch])
        elif ch in "=:#!" or (ch == " " and (key or i == 0)):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def terminate(procs: list[psutil.Process], grace: float) -> None:
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.terminate()
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    psutil.wait_procs(alive, timeout=5)


def tail_lines(path: Path, lines: int) -> list[str]:
    """The last ``lines`` lines, reading backwards from the end (logs of streams grow big)."""
    if lines <= 0:
        return []
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            pos = f.tell()
            data = b""
            while pos > 0 and data.count(b"\n") <= lines:
                step = min(pos, 64 * 1024)
                pos -= step
                f.seek(pos)
                data = f.read(step) + data
    except OSError:
        return []
    text = data.decode("utf-8", errors="replace")
    return text.splitlines()[-lines:]


def slice_lines(path: Path, start: int, size: int) -> list[str]:
    out: list[str] = []
    try:
        with path.open("rb") as f:
            for i, raw in enumerate(f):
                if i >= start + size:
                    break
                if i >= start:
                    out.append(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
    except OSError:
        return []
    return list(out)


def mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None
