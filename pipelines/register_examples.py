"""Register the example pipelines as tidegate jobs, each with one version, on cluster ``local``.

    .venv/bin/python -m pipelines.register_examples            # against `make run`
    .venv/bin/python -m pipelines.register_examples --count 2000 --save-version version.yaml

The server and token come from the environment, as for the ``tidegate`` command:
``TIDEGATE_URL`` (default http://127.0.0.1:8000) and ``TIDEGATE_TOKEN`` (``make run`` keeps
the admin token in ``.tidegate/admin-token``). It creates:

* the event log stream both pipelines read (``--root``/``--stream``, 2 partitions), and with
  ``--count N`` appends N events to it (one event per 100 ms of event time, from now);
* job ``clicks-per-minute``: ``pipelines/windowed_counts.py``, per-key counts and sums in
  1-minute event-time windows, query ``windowed_counts`` (stateful, Parquet sink);
* job ``clicks-enriched``: ``pipelines/enrich.py``, filter and classify, query ``enrich``
  (stateless, JSON-lines sink);
* job ``events-deduplicated``: ``pipelines/dedup_events.py``, each event id once over an hour
  of event time, query ``dedup_events`` (a large state, on RocksDB; Parquet sink), reading
  stream ``events`` (with ``--count N``, N events of which one in 7 is retried);
* job ``account-totals``: ``pipelines/key_totals.py``, a running count and sum per account,
  kept forever, query ``key_totals`` (a large state whose batches read only the keys they
  touch, on RocksDB; output mode update, a Parquet folder per batch), reading stream
  ``accounts`` (with ``--count N``, N events over 1,000 accounts).

Run it twice and nothing is duplicated: an existing job is kept, and a version is only added
when the job has none with the same body. It prints ``JOB VERSION`` per line (``--json``: a
document). The tidegate server runs the drivers on this machine (``make run``), so the paths
it registers are this checkout's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from app.resume_points.compat import CHANGELOG_CHECKPOINTING, PROVIDER_CLASS, ROCKSDB_PROVIDER
from pipelines.dedup_events import produce_events
from pipelines.key_totals import produce_account_events
from tidegate_runtime.eventlog import EventLog
from tidegate_runtime.produce import produce

ROOT = Path(__file__).resolve().parents[1]
WINDOWED_JOB = "clicks-per-minute"
ENRICH_JOB = "clicks-enriched"
DEDUP_JOB = "events-deduplicated"
DEDUP_STREAM = "events"
TOTALS_JOB = "account-totals"
TOTALS_STREAM = "accounts"
DEMO_ACCOUNTS = 1_000


def _pipeline_version(
    pipeline: str,
    query: dict[str, Any],
    root: Path,
    stream: str,
    out: Path,
    cluster: str,
    *,
    source: str = "clicks",
    conf: dict[str, str] | None = None,
    output_mode: str = "append",
) -> dict[str, Any]:
    """The version body of ``pipelines/<pipeline>.py``: the arguments its argparse needs and
    ``query`` (its name, stateful operators) reading ``stream`` as ``source``."""
    return {
        "app": {
            "file": str(ROOT / "pipelines" / f"{pipeline}.py"),
            "args": ["--root", str(root), "--stream", stream, "--output", str(out)],
        },
        "cluster": cluster,
        "conf": {
            # Fixed once a checkpoint exists: a later version must keep it to keep the state.
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.session.timeZone": "UTC",
            **(conf or {}),
        },
        "queries": [
            {
                **query,
                "sources": [
                    {
                        "name": source,
                        "kind": "eventlog",
                        "options": {"root": str(root), "stream": stream},
                    }
                ],
                "output_mode": output_mode,
                "trigger": "5 SECONDS",
            }
        ],
    }


def windowed_counts_version(root: Path, stream: str, out: Path, cluster: str) -> dict[str, Any]:
    """The version body of pipelines/windowed_counts.py."""
    query = {"name": "windowed_counts", "stateful_operators": [{"kind": "tumbling_window"}]}
    return _pipeline_version("windowed_counts", query, root, stream, out, cluster)


def enrich_version(root: Path, stream: str, out: Path, cluster: str) -> dict[str, Any]:
    """The version body of pipelines/enrich.py (stateless: no stateful operators)."""
    return _pipeline_version("enrich", {"name": "enrich"}, root, stream, out, cluster)


# Spark's RocksDB state store with changelog checkpointing: the state of a long watermark
# lives on the executors' disks, and each batch writes only its changes.
ROCKSDB_CONF = {PROVIDER_CLASS: ROCKSDB_PROVIDER, CHANGELOG_CHECKPOINTING: "true"}


def dedup_events_version(root: Path, stream: str, out: Path, cluster: str) -> dict[str, Any]:
    """The version body of pipelines/dedup_events.py, on RocksDB."""
    query = {"name": "dedup_events", "stateful_operators": [{"kind": "dedup_within_watermark"}]}
    return _pipeline_version(
        "dedup_events", query, root, stream, out, cluster, source="events", conf=ROCKSDB_CONF
    )


def key_totals_version(root: Path, stream: str, out: Path, cluster: str) -> dict[str, Any]:
    """The version body of pipelines/key_totals.py, on RocksDB, in output mode update."""
    query = {"name": "key_totals", "stateful_operators": [{"kind": "aggregate"}]}
    return _pipeline_version(
        "key_totals",
        query,
        root,
        stream,
        out,
        cluster,
        source="accounts",
        conf=ROCKSDB_CONF,
        output_mode="update",
    )


class Failed(Exception):
    pass


def _check(r: httpx.Response, *ok: int) -> Any:
    if r.status_code not in ok:
        try:
            detail = r.json().get("detail") or r.text
        except ValueError:
            detail = r.text
        raise Failed(f"{r.request.method} {r.request.url.path}: {r.status_code} {detail}")
    return r.json() if r.content else None


def _same(existing: dict[str, Any], body: dict[str, Any]) -> bool:
    """Same program, arguments, cluster and query names: registering again adds nothing."""
    app = existing.get("app") or {}
    return (
        app.get("file") == body["app"]["file"]
        and app.get("args") == body["app"]["args"]
        and existing.get("cluster") == body["cluster"]
        and [q.get("name") for q in existing["queries"]] == [q["name"] for q in body["queries"]]
    )


def register(
    api: httpx.Client, job: str, description: str, body: dict[str, Any]
) -> tuple[int, bool]:
    """Create ``job`` unless it exists, then a version unless an equal one exists.
    Returns (version number, created)."""
    r = api.post("/jobs", json={"name": job, "description": description})
    if r.status_code != 409:  # 409: it exists already, keep it
        _check(r, 201)
    versions = _check(api.get(f"/jobs/{job}/versions", params={"limit": 500}), 200)
    for existing in versions["items"]:
        if _same(existing, body):
            return int(existing["number"]), False
    created = _check(api.post(f"/jobs/{job}/versions", json=body), 201)
    return int(created["number"]), True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="register_examples", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    demo = Path(os.environ.get("TIDEGATE_DATA_DIR", ROOT / ".tidegate")).resolve() / "demo"
    parser.add_argument("--root", type=Path, default=demo / "log", help="event log root")
    parser.add_argument("--stream", default="clicks")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--out", type=Path, default=demo / "out", help="where the sinks write")
    parser.add_argument("--cluster", default="local")
    parser.add_argument("--count", type=int, default=0, help="events to append now")
    parser.add_argument("--json", action="store_true", help="print a JSON document")
    parser.add_argument(
        "--save-version",
        type=Path,
        help="also write clicks-per-minute's version body here (YAML), to edit into the next",
    )
    args = parser.parse_args(argv)

    url = os.environ.get("TIDEGATE_URL", "http://127.0.0.1:8000").rstrip("/")
    token = os.environ.get("TIDEGATE_TOKEN")
    if not token:
        print("error: set TIDEGATE_TOKEN (make run: $(cat .tidegate/admin-token))", file=sys.stderr)
        return 2
    root, out = args.root.resolve(), args.out.resolve()
    EventLog(root).create_stream(args.stream, args.partitions, exist_ok=True)
    EventLog(root).create_stream(DEDUP_STREAM, 2, exist_ok=True)
    EventLog(root).create_stream(TOTALS_STREAM, 2, exist_ok=True)
    if args.count:
        produce(str(root), args.stream, args.partitions, rate=0, count=args.count)
        produce_events(str(root), DEDUP_STREAM, args.count, int(time.time() * 1000))
        produce_account_events(
            str(root), TOTALS_STREAM, args.count, DEMO_ACCOUNTS, int(time.time() * 1000)
        )
    headers = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=url + "/api/v1", headers=headers, timeout=30) as api:
            cluster = api.get(f"/clusters/{args.cluster}")
            if cluster.status_code == 404:
                raise Failed(
                    f"cluster '{args.cluster}' is not registered at {url} ('make run' "
                    "registers 'local'; or give --cluster NAME)"
                )
            _check(cluster, 200)
            done = []
            for job, description, body in (
                (
                    WINDOWED_JOB,
                    "per-key counts and sums in 1-minute event-time windows",
                    windowed_counts_version(root, args.stream, out / WINDOWED_JOB, args.cluster),
                ),
                (
                    ENRICH_JOB,
                    "events with value >= 10, classified small/large",
                    enrich_version(root, args.stream, out / ENRICH_JOB, args.cluster),
                ),
                (
                    DEDUP_JOB,
                    "each event id once, over an hour of event time (RocksDB state)",
                    dedup_events_version(root, DEDUP_STREAM, out / DEDUP_JOB, args.cluster),
                ),
                (
                    TOTALS_JOB,
                    "a running count and sum per account, kept forever (RocksDB state)",
                    key_totals_version(root, TOTALS_STREAM, out / TOTALS_JOB, args.cluster),
                ),
            ):
                number, created = register(api, job, description, body)
                done.append({"job": job, "version": number, "created": created})
    except (Failed, httpx.HTTPError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.save_version is not None:
        body = windowed_counts_version(root, args.stream, out / WINDOWED_JOB, args.cluster)
        args.save_version.write_text(yaml.safe_dump(body, sort_keys=False))
    if args.json:
        print(json.dumps({"stream": str(root / args.stream), "jobs": done}, indent=2))
    else:
        for row in done:
            print(f"{row['job']} {row['version']}{'' if row['created'] else ' (existing)'}")
        print(
            f"submit with: tidegate submit {WINDOWED_JOB} --version {done[0]['version']} --wait",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
