"""What every driver tidegate submits carries: the runtime zip first among its py-files, and
the version's queries as the runtime reads them (``spark.tidegate.queries``).

A run's driver (app/worker/reconcile/run.py) and a dry run's (app/worker/dry_run/driver.py)
both build their ``SubmitSpec`` from these, so the two can never disagree on how a version is
started.
"""

from __future__ import annotations

import json
from typing import Any

from app.backends.base import PermanentBackendError, SubmitSpec
from app.core import run_states as states
from app.worker.core.context import WorkerContext
from app.worker.core.runtime_bundle import runtime_bundle
from tidegate_runtime import contract
from tidegate_runtime.driver.sinks import declared_sink

__all__ = [
    "py_files",
    "python_path_conf",
    "queries_conf",
    "run_spec",
    "spec",
]

QUERY_CONF_KEYS = (
    "name",
    "trigger",
    "output_mode",
    "partitioned_on",
    "checkpoint_location",
    "upstream",
)


def py_files(ctx: WorkerContext, version: Any) -> list[str]:
    """The runtime zip, then the version's own py-files (a team's own modules)."""
    directory = ctx.settings.resolved_runtime_bundle_dir
    try:
        bundle = runtime_bundle(directory)
    except OSError as exc:  # a setting to fix, not something a retry mends
        raise PermanentBackendError(
            f"cannot write the runtime zip that every driver needs to {directory} "
            f"({exc.strerror or type(exc).__name__}): make it writable by the worker and "
            "readable by the Spark nodes, or set TIDEGATE_RUNTIME_BUNDLE_DIR"
        ) from None
    return [str(bundle), *version.app.get("py_files", [])]


def python_path_conf(files: list[str], conf: dict[str, str]) -> dict[str, str]:
    """``spark.executorEnv.PYTHONPATH`` with ``files`` ahead of what the version set.

    Py-files reach the driver and the executors' task workers, but not the Python processes
    Spark starts to plan a Python data source (the streaming source runner unpickles the
    event-log source, a ``tidegate_runtime`` class, before any task runs): those get only
    the executor environment. Without this a cluster Python without tidegate fails with
    "No module named 'tidegate_runtime'" at the first batch."""
    key = "spark.executorEnv.PYTHONPATH"
    paths = [f.removeprefix("file:") for f in files if "://" not in f]
    if conf.get(key):
        paths.append(conf[key])
    return {key: ":".join(paths)} if paths else {}


def queries_conf(version: Any, *, scratch: bool = False) -> str:
    """The version's queries for ``spark.tidegate.queries``. Source options stay out of the
    Spark conf (the UI shows it): the runtime reads them through its directives. A scratch
    driver (a dry run) never writes to a fixed checkpoint location."""
    return json.dumps(
        [
            {
                **{k: q.get(k) for k in QUERY_CONF_KEYS},
                **({"checkpoint_location": None} if scratch else {}),
                "stateful": bool(q.get("stateful_operators")),
                "sources": [{"name": s["name"], "kind": s["kind"]} for s in q["sources"]],
                **({"sink": declared_sink(q["sink"])} if q.get("sink") else {}),
            }
            for q in version.queries
        ],
        separators=(",", ":"),
    )


def run_spec(
    ctx: WorkerContext,
    run: Any,
    bootstrap: str,
    *,
    spare: bool = False,
    dry_run: dict[str, Any] | None = None,
) -> SubmitSpec:
    """The submission of a run's current attempt, or (``spare``) of its spare for the next
    one. A standby run's driver and a spare build their session, start Python, then wait for
    go before the job's code reaches a checkpoint. ``dry_run``: the spare first runs the
    job's code on that scratch copy of the run's state (app/worker/reconcile/spare.py)."""
    version = run.version
    checkpoint_dir = ctx.settings.resolved_checkpoint_root / run.job.name / str(run.id)
    attempt = run.spare_attempt if spare else run.attempt
    conf = {
        **version.conf,
        contract.API_URL: ctx.settings.api_url,
        contract.JOB: run.job.name,
        contract.RUN_ID: str(run.id),
        contract.ATTEMPT: str(attempt),
        contract.VERSION: str(version.number),
        contract.CHECKPOINT_DIR: str(checkpoint_dir),
        contract.QUERIES: queries_conf(version),
    }
    if spare or run.state == states.STANDBY:
        conf[contract.STANDBY] = "true"
        # A hot spare waits as long as its run runs; the channel tells it when to stop.
        timeout = (
            ctx.settings.spare_timeout_seconds if spare else ctx.settings.standby_timeout_seconds
        )
        conf[contract.STANDBY_TIMEOUT_SECONDS] = str(timeout)
    if not spare and run.state == states.STANDBY and run.standby_dry_run:
        conf.update(standby_dry_run_conf(run.standby_dry_run))
    if spare and dry_run:
        conf.update(standby_dry_run_conf(dry_run))
    if spare:
        conf[contract.SPARE] = str(run.spare_seq)
    # The driver gets a single-use bootstrap token, as an environment variable (not in the
    # Spark UI's environment page, nor in logs): a backend may still show it (Livy carries
    # the environment as conf), and the driver's first call spends it for its run token.
    tag = run.spare_tag if spare else run.tag
    return spec(ctx, version, tag, conf, env={contract.BOOTSTRAP_ENV: bootstrap})


def standby_dry_run_conf(dry_run: dict[str, Any]) -> dict[str, str]:
    """A standby that runs its update's dry run on the scratch copy before it waits (the same
    confs a dry-run driver reads, but its checkpoint_dir stays its run's own)."""
    scratch = str(dry_run["scratch"])
    return {
        contract.STANDBY_DRY_RUN_DIR: scratch,
        contract.DRY_RUN_QUERIES: json.dumps(sorted(dry_run["check"])),
        contract.DRY_RUN_TRIAL: json.dumps(dry_run.get("trial") or {}),
        contract.DRY_RUN_RESULT: f"{scratch}/{contract.DRY_RUN_RESULT_FILE}",
        contract.DRY_RUN_TIMEOUT: str(int(dry_run["timeout"])),
    }


def spec(
    ctx: WorkerContext,
    version: Any,
    tag: str,
    conf: dict[str, str],
    env: dict[str, str] | None = None,
) -> SubmitSpec:
    """The submission of ``version``'s app under ``tag``, the runtime shipped with it."""
    files = py_files(ctx, version)
    return SubmitSpec(
        tag=tag,
        file=version.app["file"],
        py_files=files,
        args=list(version.app.get("args", [])),
        conf={**conf, **python_path_conf(files, conf)},
        env=dict(env or {}),
    )
