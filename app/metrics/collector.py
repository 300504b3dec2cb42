"""Run, query, operation and worker metrics, computed at scrape time from what the store holds:
a fixed set of aggregate statements per scrape, whatever the number of jobs. Labels are job, query,
source, state, kind and outcome only (never run ids or partitions), so a series lives as
long as its job. See docs/observability.md for every metric."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterator
from typing import Any, get_args

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from app.core import run_states as states
from app.core.durations import parse_trigger
from app.core.liveness import LIVE_WORKER
from app.metrics.progress import figures
from app.operations.models import FAILED, PENDING, RUNNING, SUCCEEDED
from app.operations.schemas import OperationKind

log = logging.getLogger(__name__)

OPERATION_KINDS = get_args(OperationKind)
OPERATION_OUTCOMES = (SUCCEEDED, FAILED)
# Operations take from a second (stop) to an hour (a drain with a long timeout).
DURATION_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)
_ACTIVE = ", ".join(f"'{s}'" for s in sorted(states.ACTIVE))

RUNS = text(
    """
    select j.id, j.name, coalesce(r.state, j.state), r.state, r.attempt,
           extract(epoch from now() - r.created_at),
           extract(epoch from now() - r.running_since),
           extract(epoch from r.next_restart_at - now())
    from jobs j left join runs r on r.id = j.current_run_id
    """
)
# Counters from the stored transitions, so they only grow: a supervised restart is
# restarting -> submitting; a failure is any move to restarting or failed.
TRANSITIONS = text(
    """
    select r.job_id,
           count(*) filter (where t.from_state = 'restarting' and t.to_state = 'submitting'),
           count(*) filter (where t.to_state in ('restarting', 'failed'))
    from run_transitions t join runs r on r.id = t.run_id
    where t.to_state in ('restarting', 'failed', 'submitting')
    group by r.job_id
    """
)
# Pre-warmed drivers waiting for go, per job: an update's standby run (what a pre-warmed
# update costs while it lasts) and a run's spare (a hot spare costs one for as long as it runs).
STANDBYS = text(
    """
    select j.name, count(*) filter (where w.ready), count(*)
    from (
        select job_id, standby_ready_at is not null as ready from runs where state = 'standby'
        union all
        select job_id, spare_ready_at is not null from runs where spare_attempt is not null
    ) w join jobs j on j.id = w.job_id
    group by j.name
    """
)
# One row per declared query of each active current run, with the parts of its latest report
# the figures need (not the descriptions and start offsets: less JSON to ship and parse).
# A query's restarts by the driver alone (per-query supervision), over all of the job's runs.
QUERY_RESTARTS = text(
    """
    select j.name, q.key, sum(coalesce((q.value ->> 'restarts')::bigint, 0))
    from runs r join jobs j on j.id = r.job_id
    cross join lateral jsonb_each(r.query_restarts) q
    where r.query_restarts is not null
    group by j.name, q.key
    """
)
# Rows a query's stateful operators dropped as late (behind the watermark), over all of the
# job's runs: each run keeps its per-query tally, each batch counted once (app/runs/late.py).
LATE_ROWS = text(
    """
    select j.name, q.key, sum(coalesce((q.value ->> 'rows')::bigint, 0))
    from runs r join jobs j on j.id = r.job_id
    cross join lateral jsonb_each(r.late_rows) q
    where r.late_rows is not null
    group by j.name, q.key
    """
)
QUERIES = text(
    f"""
    select j.name, q.value ->> 'name', q.value ->> 'trigger', q.value -> 'sources',
           jsonb_build_object(
               'batch_id', l.p -> 'batch_id', 'timestamp', l.p -> 'timestamp',
               'num_input_rows', l.p -> 'num_input_rows', 'watermark', l.p -> 'watermark',
               'idle_at', l.p -> 'idle_at', 'durations_ms', l.p -> 'durations_ms',
               'state_operators', l.p -> 'state_operators',
               'sources', (select jsonb_agg(jsonb_build_object(
                                'latest_offset', s -> 'latest_offset',
                                'end_offset', s -> 'end_offset'))
                           from jsonb_array_elements(l.p -> 'sources') s)),
           extract(epoch from now()), extract(epoch from r.running_since),
           (select extract(epoch from p.at) from query_progress p
            where p.run_id = r.id and p.query = q.value ->> 'name'
            order by p.id desc limit 1),
           (select p.payload ->> 'timestamp' from query_progress p
            where p.run_id = r.id and p.query = q.value ->> 'name'
            order by p.id desc offset 1 limit 1)
    from jobs j
    join runs r on r.id = j.current_run_id and r.state in ({_ACTIVE})
    join job_versions v on v.id = r.version_id
    cross join lateral jsonb_array_elements(v.queries) q
    cross join lateral (select r.progress -> (q.value ->> 'name') as p) l
    """
)
_BUCKET_COLUMNS = ", ".join(
    f"count(*) filter (where d.seconds <= {b}) as le_{i}" for i, b in enumerate(DURATION_BUCKETS)
)
OPERATIONS = text(
    """
    select kind, state, count(*), count(started_at),
           extract(epoch from now() - min(created_at)),
           extract(epoch from now() - min(started_at))
    from operations group by kind, state
    """
)
DURATIONS = text(
    f"""
    select d.kind, count(*), coalesce(sum(d.seconds), 0), {_BUCKET_COLUMNS}
    from (select kind, extract(epoch from finished_at - started_at) as seconds
          from operations where finished_at is not null and started_at is not null) d
    group by d.kind
    """
)
WORKERS = text(
    f"""
    select count(*) filter (where {LIVE_WORKER}),
           extract(epoch from now() - max(heartbeat_at) filter (where stopped_at is null)),
           coalesce(sum(lease_renewals), 0)
    from worker_heartbeats
    """
)


@functools.lru_cache(maxsize=256)
def _trigger_seconds(trigger: str | None) -> float:
    return parse_trigger(trigger) / 1000 if trigger else 0.0


def _gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=labels)


class StoreCollector(Collector):
    """A prometheus_client custom collector over the store (registered per app)."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self.factory = factory

    def describe(self) -> list[Metric]:
        return []  # nothing at registration: the store is read at scrape time only

    def collect(self) -> Iterator[Metric]:
        start = time.perf_counter()
        up = GaugeMetricFamily(
            "tidegate_metrics_store_up",
            "1 if the store answered this scrape's queries, 0 if not (metrics below missing).",
        )
        try:
            with self.factory() as session:
                # Row estimates of jsonb_array_elements are high enough to trigger JIT, which
                # costs a second of compiling to save milliseconds of running.
                session.execute(text("set local jit = off"))
                families = [
                    *self._runs(session),
                    *self._queries(session),
                    *self._operations(session),
                    *self._workers(session),
                ]
            up.add_metric([], 1)
        except Exception as exc:  # the store is down: say so, keep the HTTP metrics
            log.warning("metrics: the store did not answer: %s", str(exc).splitlines()[0])
            families = []
            up.add_metric([], 0)
        yield from families
        yield up
        took = GaugeMetricFamily(
            "tidegate_metrics_collect_seconds", "How long this scrape's store queries took."
        )
        took.add_metric([], time.perf_counter() - start)
        yield took

    def _runs(self, session: Session) -> list[Metric]:
        state = _gauge(
            "tidegate_job_state",
            "1 for the job's current state (its current run's, or idle); other states absent.",
            ["job", "state"],
        )
        attempt = _gauge(
            "tidegate_run_attempt", "The current run's attempt (0: never restarted).", ["job"]
        )
        age = _gauge("tidegate_run_age_seconds", "Since the active run was created.", ["job"])
        uptime = _gauge(
            "tidegate_run_uptime_seconds", "Since the running run's attempt started.", ["job"]
        )
        restart_in = _gauge(
            "tidegate_run_restart_in_seconds",
            "Until the next supervised restart of a restarting run (0: due now).",
            ["job"],
        )
        restarts = CounterMetricFamily(
            "tidegate_run_restarts",
            "Supervised restarts (restarting -> submitting) over all of the job's runs.",
            labels=["job"],
        )
        failures = CounterMetricFamily(
            "tidegate_run_failures",
            "Attempts that failed (-> restarting or failed) over all of the job's runs.",
            labels=["job"],
        )
        counts = {row[0]: (row[1], row[2]) for row in session.execute(TRANSITIONS)}
        for job_id, job, job_state, run_state, run_attempt, age_s, up_s, in_s in session.execute(
            RUNS
        ):
            state.add_metric([job, job_state], 1)
            restarted, failed = counts.get(job_id, (0, 0))
            restarts.add_metric([job], restarted)
            failures.add_metric([job], failed)
            if run_state is None:
                continue
            attempt.add_metric([job], run_attempt)
            if run_state in states.ACTIVE:
                age.add_metric([job], float(age_s))
            if run_state == states.RUNNING and up_s is not None:
                uptime.add_metric([job], float(up_s))
            if run_state == states.RESTARTING and in_s is not None:
                restart_in.add_metric([job], max(0.0, float(in_s)))
        standbys = _gauge(
            "tidegate_job_standby_drivers",
            "Pre-warmed drivers of the job (an update's standby run, or a run's spare for its "
            "next attempt): each holds a driver and its executors until go. ready: its session "
            "built, waiting for go.",
            ["job", "ready"],
        )
        for job, ready, total in session.execute(STANDBYS):
            standbys.add_metric([job, "true"], int(ready))
            standbys.add_metric([job, "false"], int(total) - int(ready))
        return [state, attempt, age, uptime, restart_in, restarts, failures, standbys]

    def _queries(self, session: Session) -> list[Metric]:
        labels = ["job", "query"]
        trigger = _gauge(
            "tidegate_query_trigger_interval_seconds",
            "The query's declared trigger interval (0: as fast as possible).",
            labels,
        )
        gauges: dict[str, GaugeMetricFamily] = {
            "batch_id": _gauge("tidegate_query_last_batch_id", "The last batch id.", labels),
            "batch_seconds": _gauge(
                "tidegate_query_batch_duration_seconds", "The last batch's duration.", labels
            ),
            "input_rows_per_second": _gauge(
                "tidegate_query_input_rows_per_second",
                "Input rows of the last batch over the time since the batch before.",
                labels,
            ),
            "processed_rows_per_second": _gauge(
                "tidegate_query_processed_rows_per_second",
                "Input rows of the last batch over its duration.",
                labels,
            ),
            "watermark_delay_seconds": _gauge(
                "tidegate_query_watermark_delay_seconds", "now - the query's watermark.", labels
            ),
            "watermark_lead_seconds": _gauge(
                "tidegate_query_watermark_lead_seconds",
                "The query's watermark minus the driver's clock now (its clock at the last "
                "batch's start, plus the time since): positive when the watermark runs ahead of "
                "the clock (event times from the future drop live rows as late).",
                labels,
            ),
            "state_rows": _gauge(
                "tidegate_query_state_rows", "Rows in the query's state stores.", labels
            ),
            "state_bytes": _gauge(
                "tidegate_query_state_bytes", "Memory used by the query's state stores.", labels
            ),
            "state_rows_read_to_evict": _gauge(
                "tidegate_query_state_rows_read_to_evict",
                "State rows the last batch read to find what to evict (Spark's "
                "numRowsReadDuringEviction, summed over the stateful operators): near "
                "tidegate_query_state_rows, every batch's time grows with the state.",
                labels,
            ),
            "last_progress_age_seconds": _gauge(
                "tidegate_query_last_progress_age_seconds",
                "Since the query last reported (a batch or an idle event), else since the "
                "run's attempt started running.",
                labels,
            ),
        }
        backlog = _gauge(
            "tidegate_query_source_backlog_records",
            "Records behind the latest offsets (sum over partitions of latest - end offset); "
            "eventlog and kafka sources.",
            ["job", "query", "source"],
        )
        late: dict[tuple[str, str], int] = {}
        for job, query, trig, declared, latest, now, running, last_at, prev in session.execute(
            QUERIES
        ):
            key = [job, query]
            late[(job, query)] = 0  # present from 0 while it runs: the first drop is an increase
            trigger.add_metric(key, _trigger_seconds(trig))
            fig = figures(
                latest,
                declared or [],
                now=float(now),
                last_report_at=float(last_at) if last_at is not None else None,
                previous_timestamp=prev,
                running_since=float(running) if running is not None else None,
            )
            for attr, family in gauges.items():
                value = getattr(fig, attr)
                if value is not None:
                    family.add_metric(key, value)
            for source, behind in fig.backlog.items():
                backlog.add_metric([job, query, source], behind)
        restarts = CounterMetricFamily(
            "tidegate_query_restarts",
            "Restarts of the query alone by its driver after it failed (the job's restart "
            "policy, per query; its other queries kept running), over all of the job's runs.",
            labels=labels,
        )
        for job, query, count in session.execute(QUERY_RESTARTS):
            restarts.add_metric([job, query], int(count))
        dropped = CounterMetricFamily(
            "tidegate_query_rows_dropped_late",
            "Rows the query's stateful operators dropped because their event time was behind "
            "the watermark (Spark's numRowsDroppedByWatermark), over all of the job's runs, "
            "each batch counted once.",
            labels=labels,
        )
        for job, query, count in session.execute(LATE_ROWS):
            late[(job, query)] = int(count)
        for (job, query), count in late.items():
            dropped.add_metric([job, query], count)
        return [trigger, *gauges.values(), backlog, restarts, dropped]

    def _operations(self, session: Session) -> list[Metric]:
        started: dict[str, float] = dict.fromkeys(OPERATION_KINDS, 0)
        finished: dict[tuple[str, str], float] = {
            (k, o): 0 for k in OPERATION_KINDS for o in OPERATION_OUTCOMES
        }
        active = _gauge(
            "tidegate_operations", "Operations pending or running now.", ["kind", "state"]
        )
        oldest_pending = _gauge(
            "tidegate_operation_oldest_pending_age_seconds",
            "Age of the oldest operation no worker has claimed yet.",
            ["kind"],
        )
        oldest_running = _gauge(
            "tidegate_operation_oldest_running_age_seconds",
            "Since the longest-running operation started.",
            ["kind"],
        )
        for kind, state, count, with_start, created_age, started_age in session.execute(OPERATIONS):
            started[kind] = started.get(kind, 0) + with_start
            if state in OPERATION_OUTCOMES:
                finished[(kind, state)] = count
            elif state == PENDING:
                active.add_metric([kind, state], count)
                oldest_pending.add_metric([kind], float(created_age))
            elif state == RUNNING:
                active.add_metric([kind, state], count)
                oldest_running.add_metric([kind], float(started_age or 0.0))
        started_family = CounterMetricFamily(
            "tidegate_operations_started",
            "Operations a worker has started, by kind.",
            labels=["kind"],
        )
        for kind, n in started.items():
            started_family.add_metric([kind], n)
        finished_family = CounterMetricFamily(
            "tidegate_operations_finished",
            "Operations finished, by kind and outcome (succeeded, failed).",
            labels=["kind", "outcome"],
        )
        for (kind, outcome), n in finished.items():
            finished_family.add_metric([kind, outcome], n)
        durations = HistogramMetricFamily(
            "tidegate_operation_duration_seconds",
            "From start to finish of the finished operations, by kind.",
            labels=["kind"],
        )
        for kind, count, total, *cumulative in session.execute(DURATIONS):
            buckets: list[tuple[str, Any]] = [
                (str(b), n) for b, n in zip(DURATION_BUCKETS, cumulative, strict=True)
            ]
            durations.add_metric([kind], [*buckets, ("+Inf", count)], float(total))
        return [started_family, finished_family, durations, active, oldest_pending, oldest_running]

    def _workers(self, session: Session) -> list[Metric]:
        live, age, renewals = session.execute(WORKERS).one()
        live_family = _gauge(
            "tidegate_workers_live", "Workers whose heartbeat is under 3 beats old.", []
        )
        live_family.add_metric([], live)
        out: list[Metric] = [live_family]
        if age is not None:
            age_family = _gauge(
                "tidegate_worker_heartbeat_age_seconds",
                "Since the freshest heartbeat of a worker that has not stopped.",
                [],
            )
            age_family.add_metric([], max(0.0, float(age)))
            out.append(age_family)
        renewals_family = CounterMetricFamily(
            "tidegate_worker_lease_renewals", "Operation leases renewed by all workers."
        )
        renewals_family.add_metric([], renewals)
        out.append(renewals_family)
        return out
