#!/usr/bin/env python3
"""Container health check for every tidegate image role (standard library only).

Usage (exit 0 = healthy, 1 = unhealthy):

    healthcheck.py                 # auto: pick the role from PID 1's command line
    healthcheck.py api [PATH]      # GET http://127.0.0.1:$TIDEGATE_PORT/PATH (default /healthz)
    healthcheck.py spark-master    # UI /json/ says ALIVE and REST /v1/submissions/readyz succeeds
    healthcheck.py spark-worker    # worker UI /json/ answers

One image serves several roles (``tidegate api``, ``tidegate worker``, ``tidegate migrate``,
Spark master/worker), but a Dockerfile has a single HEALTHCHECK. In ``auto`` mode the check
looks at what the container actually runs (PID 1, or its child when PID 1 is ``docker-init``
because of ``init: true``) and checks that; roles with nothing to probe (worker, migrate)
report healthy.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import urllib.error
import urllib.request

TIMEOUT_S = 4.0
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
    except OSError:
        return []


def _flag(argv: list[str], name: str, default: str) -> str:
    """Value of ``--name value`` in argv, else default."""
    for i, arg in enumerate(argv[:-1]):
        if arg == name:
            return argv[i + 1]
    return default


def _main_argv() -> list[str]:
    """PID 1's argv; with docker-init/tini as PID 1 its argv already includes the command.

    HEALTHCHECK_PID overrides the process to inspect (for tests)."""
    return _cmdline(int(os.environ.get("HEALTHCHECK_PID", "1")))


def detect_role(argv: list[str]) -> str:
    if MASTER_CLASS in argv:
        return "spark-master"
    if WORKER_CLASS in argv:
        return "spark-worker"
    # `tidegate api` (console script: argv is [python, .../tidegate, api]) or `-m app.cli api`.
    if "api" in argv and any(os.path.basename(a) == "tidegate" or a == "app.cli" for a in argv):
        return "api"
    return "none"


def check_api(path: str = "/healthz") -> bool:
    port = os.environ.get("TIDEGATE_PORT", "8000")
    status, _ = _get(f"http://127.0.0.1:{port}{path}")
    return status == 200


def check_spark_master(argv: list[str]) -> bool:
    # The RPC and REST servers bind to the `--host` address only; the web UI binds to all.
    host = _flag(argv, "--host", os.environ.get("SPARK_MASTER_HOST", socket.gethostname()))
    ui_port = _flag(argv, "--webui-port", os.environ.get("SPARK_MASTER_WEBUI_PORT", "8080"))
    rest_port = os.environ.get("SPARK_MASTER_REST_PORT", "6066")
    for arg in argv:  # -Dspark.master.rest.port=NNNN from SPARK_MASTER_OPTS
        if arg.startswith("-Dspark.master.rest.port="):
            rest_port = arg.split("=", 1)[1]
    status, body = _get(f"http://127.0.0.1:{ui_port}/json/")
    if status != 200 or json.loads(body).get("status") != "ALIVE":
        return False
    status, body = _get(f"http://{host}:{rest_port}/v1/submissions/readyz")
    return status == 200 and json.loads(body).get("success") is True


def check_spark_worker(argv: list[str]) -> bool:
    ui_port = _flag(argv, "--webui-port", os.environ.get("SPARK_WORKER_WEBUI_PORT", "8081"))
    status, _ = _get(f"http://127.0.0.1:{ui_port}/json/")
    return status == 200


def main(args: list[str]) -> int:
    argv = _main_argv()
    role = args[0] if args else "auto"
    if role == "auto":
        role = detect_role(argv)
    try:
        if role == "api":
            ok = check_api(args[1] if len(args) > 1 else "/healthz")
        elif role == "spark-master":
            ok = check_spark_master(argv)
        elif role == "spark-worker":
            ok = check_spark_worker(argv)
        elif role == "none":
            ok = True
        else:
            print(f"unknown role {role!r}", file=sys.stderr)
            return 1  # Docker reserves exit code 2
    except (OSError, ValueError) as exc:  # connection refused, timeout, bad JSON
        print(f"{role}: {exc}", file=sys.stderr)
        return 1
    if not ok:
        print(f"{role}: unhealthy", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
