"""What every driver tidegate submits carries: the runtime zip first among its py-files, and
the version's queries as the runtime reads them (``spark.tidegate.queries``).

A run's driver (``reconcile``) and a dry run's (``preflight``) both build their
``SubmitSpec`` from these, so the two can never disagree on how a version is started.
"""

from __future__ import annotations

import json
from typing import Any

from app.worker.context import WorkerContext
from app.worker.runtime_bundle import runtime_bundle

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
    bundle = runtime_bundle(ctx.settings.resolved_runtime_bundle_dir)
    return [str(bundle), *version.app.get("py_files", [])]


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
            }
            for q in version.queries
        ],
        separators=(",", ":"),
    )
