"""Bulk data for the benchmarks, written with COPY (the API would take far longer to fill a
database with 100k jobs; the benchmarks measure reads and writes, not the filling)."""

from __future__ import annotations

import json

import psycopg

POLICY = json.dumps({"enabled": True, "min_backoff": "1s", "max_backoff": "1h"})


def cluster(url: str, name: str = "bench") -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "insert into clusters (name, kind, url, created_at) values (%s, 'livy', "
            "'http://127.0.0.1:9', now()) on conflict (name) do update set name = excluded.name "
            "returning id",
            (name,),
        ).fetchone()
        assert row is not None
        return int(row[0])


def jobs(url: str, start: int, stop: int, *, prefix: str = "job", running_every: int = 100) -> None:
    """Jobs ``{prefix}-{i:07d}`` for i in [start, stop); one in ``running_every`` is running."""
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        with cur.copy(
            "copy jobs (name, description, restart_policy, state, revision, created_by, "
            "created_at, updated_at) from stdin"
        ) as copy:
            for i in range(start, stop):
                state = "running" if i % running_every == 0 else "idle"
                copy.write_row(
                    (f"{prefix}-{i:07d}", "bench", POLICY, state, 1, "bench", "now", "now")
                )
        cur.execute("analyze jobs")


def versions(url: str, names: list[str], cluster_id: int, source: dict[str, object]) -> None:
    """Version 1 of each named job, reading ``source``."""
    queries = json.dumps(
        [
            {
                "name": "q",
                "name_derived": False,
                "sources": [source],
                "stateful_operators": [],
                "output_mode": "append",
                "trigger": None,
                "partitioned_on": [],
                "checkpoint_location": None,
            }
        ]
    )
    with psycopg.connect(url) as conn:
        conn.execute(
            "insert into job_versions (job_id, number, cluster_id, app, conf, queries, "
            "created_by, created_at) select id, 1, %s, '{\"file\": \"/opt/app.py\"}', '{}', "
            "%s, 'bench', now() from jobs where name = any(%s)",
            (cluster_id, queries, names),
        )


def startpoints(url: str, per_job: int, *, prefix: str = "job", source: str = "clicks") -> int:
    """``per_job`` partition startpoints for every job named ``{prefix}-…`` that has none."""
    with psycopg.connect(url) as conn:
        cur = conn.execute(
            "insert into startpoints (job_id, source, partition, type, value, state, "
            "created_by, created_at, updated_at) "
            "select j.id, %s, p, 'OFFSET', p * 10, 'pending', 'bench', now(), now() "
            "from jobs j cross join generate_series(0, %s - 1) p "
            "where j.name like %s and not exists "
            "(select 1 from startpoints s where s.job_id = j.id)",
            (source, per_job, f"{prefix}-%"),
        )
        conn.execute("analyze startpoints")
        return cur.rowcount


def snapshots(url: str, n: int, *, prefix: str = "job") -> int:
    """Grow the snapshots table to ``n`` rows: ``ready`` snapshots spread round-robin over the
    jobs named ``{prefix}-…`` (one per job, then a second per job, …). Returns the rows added."""
    with psycopg.connect(url) as conn:
        (have,) = conn.execute("select count(*) from snapshots").fetchone()  # type: ignore[misc]
        (jobs,) = conn.execute(
            "select count(*) from jobs where name like %s", (f"{prefix}-%",)
        ).fetchone()  # type: ignore[misc]
        if n <= have or jobs == 0:
            return 0
        queries = json.dumps({"q": {"batch_id": 41, "sources": [{"name": "clicks"}]}})
        cur = conn.execute(
            "with j as (select id, row_number() over (order by id) - 1 as k from jobs "
            "where name like %(prefix)s) "
            "insert into snapshots (job_id, name, state, stop, version_number, queries, "
            "size_bytes, bytes_written, file_count, manifest, created_by, created_at, "
            "completed_at) "
            "select j.id, 's-' || lpad(g::text, 7, '0'), 'ready', false, 1, %(queries)s, "
            "4096 + g, 4096, 3, 'snapshots/' || g || '/manifest.json', 'bench', "
            "now() - make_interval(secs => %(n)s - g), now() - make_interval(secs => %(n)s - g) "
            "from generate_series(%(have)s, %(n)s - 1) g join j on j.k = g %% %(jobs)s",
            {"prefix": f"{prefix}-%", "queries": queries, "n": n, "have": have, "jobs": jobs},
        )
        conn.execute("analyze snapshots")
        return cur.rowcount
