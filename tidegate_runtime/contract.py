"""The contract between tidegate's two sides, each fact written once: the Spark conf keys the
worker sets on a driver and the runtime in it reads, the environment variable that carries the
run's bootstrap token, the dry run's result file, and PSTL's restart backoff (the worker's
supervisor and the runtime's per-query supervisor wait by the same formula). Standard library
only: the worker imports it without pyspark."""

from __future__ import annotations

import random

PREFIX = "spark.tidegate."  # reserved: a version's conf may not set these

# Every driver tidegate starts (app/worker/core/submission.py → tidegate_runtime/driver/runtime.py).
API_URL = PREFIX + "api_url"
JOB = PREFIX + "job"
RUN_ID = PREFIX + "run_id"
ATTEMPT = PREFIX + "attempt"
VERSION = PREFIX + "version"
CHECKPOINT_DIR = PREFIX + "checkpoint_dir"  # the run's folder: <root>/<job>/<run>
QUERIES = PREFIX + "queries"  # JSON list of the version's queries (submission.queries_conf)

# A driver started ahead to wait for go (tidegate_runtime/driver/standby.py).
STANDBY = PREFIX + "standby"
STANDBY_TIMEOUT_SECONDS = PREFIX + "standby_timeout_seconds"
SPARE = PREFIX + "spare"  # a spare: the attempt number its go is given to
STANDBY_DRY_RUN_DIR = PREFIX + "standby_dry_run_dir"  # the dry run it runs before it waits

# A dry run (tidegate_runtime/driver/dry_run.py).
DRY_RUN = PREFIX + "dry_run"
DRY_RUN_QUERIES = PREFIX + "dry_run_queries"  # JSON list: the queries that resume state
DRY_RUN_TRIAL = PREFIX + "dry_run_trial"  # JSON: per query, the trial batch's offsets:
# {query: {source: {"start": {partition: offset}, "end": {…}}}} (a fresh version's trial)
DRY_RUN_RESULT = PREFIX + "dry_run_result"  # where the verdict is written
DRY_RUN_TIMEOUT = PREFIX + "dry_run_timeout"
DRY_RUN_RESULT_FILE = "_dryrun.json"

# The run's one-time bootstrap token, handed to the driver's environment (never its conf).
BOOTSTRAP_ENV = "TIDEGATE_RUN_BOOTSTRAP"
# The run token itself, for a driver started with it rather than the bootstrap (by hand).
RUN_TOKEN_ENV = "TIDEGATE_RUN_TOKEN"


def backoff_seconds(
    min_backoff: float,
    max_backoff: float,
    random_factor: float,
    retry: int,
    rng: random.Random | None = None,
) -> float:
    """PSTL's restart delay: min_backoff doubled ``retry`` times (0 for the first restart), at
    most max_backoff, then stretched by up to ``random_factor``."""
    base = min(max_backoff, min_backoff * 2 ** min(max(0, retry), 64))  # no float overflow
    return float(base * (1 + (rng or random).random() * random_factor))
