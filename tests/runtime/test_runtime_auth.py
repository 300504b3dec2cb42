"""A driver tidegate started must hold its run token: on a real SparkSession, the runtime
without one, or with a wrong one, refuses to start and says why (before any query runs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.support.stack import running_stack
from tidegate_runtime.contract import BOOTSTRAP_ENV, RUN_TOKEN_ENV
from tidegate_runtime.driver.channel import ControlPlaneRefused
from tidegate_runtime.driver.runtime import Runtime

pytestmark = pytest.mark.spark


@pytest.fixture
def managed(spark: SparkSession, tmp_path: Path) -> Iterator[str]:
    """The session configured the way the worker configures a driver of run 1."""
    with running_stack(tmp_path) as stack:
        keys = {
            "spark.tidegate.api_url": stack.url,
            "spark.tidegate.run_id": "1",
            "spark.tidegate.attempt": "0",
        }
        for key, value in keys.items():
            spark.conf.set(key, value)
        try:
            yield stack.url
        finally:
            for key in keys:
                spark.conf.unset(key)


def test_no_token_is_refused_and_says_so(
    spark: SparkSession, managed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(RUN_TOKEN_ENV, raising=False)
    monkeypatch.delenv(BOOTSTRAP_ENV, raising=False)
    with pytest.raises(ControlPlaneRefused, match=f"{BOOTSTRAP_ENV} nor {RUN_TOKEN_ENV}.*Resubmit"):
        Runtime.from_spark(spark)


@pytest.mark.parametrize("env", [RUN_TOKEN_ENV, BOOTSTRAP_ENV])
def test_a_wrong_token_is_refused_and_says_so(
    spark: SparkSession, managed: str, monkeypatch: pytest.MonkeyPatch, env: str
) -> None:
    monkeypatch.setenv(env, "tg_not-a-real-token")
    with pytest.raises(ControlPlaneRefused, match="refused this run's token"):
        Runtime.from_spark(spark)


def test_an_unmanaged_session_needs_no_token(spark: SparkSession) -> None:
    assert spark.conf.get("spark.tidegate.run_id", None) is None
    assert Runtime.from_spark(spark).managed is False


def test_an_idle_query_says_so_through_the_api(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark runs no batch without new input and posts no progress then; the runtime turns
    its idle event into the query's ``idle_at``, which is how an update verifies a new run
    whose sources are quiet."""
    import json

    from sqlalchemy import select

    from app.auth.service import Scope, create_run_token
    from app.core.db import make_engine, make_sessionmaker, transaction
    from app.jobs.models import Job
    from app.runs.models import Run
    from tests.support.stack import wait_until
    from tidegate_runtime.sources.eventlog import EventLog
    from tidegate_runtime.sources.eventlog_source import read_events

    root = tmp_path / "log"
    stream = EventLog(root).create_stream("quiet", 1)
    (tmp_path / "stack").mkdir()
    with running_stack(tmp_path / "stack") as stack:
        assert (
            stack.client.post(
                "/clusters", json={"name": "c", "kind": "livy", "url": "http://x"}
            ).status_code
            == 201
        )
        assert stack.client.post("/jobs", json={"name": "quiet"}).status_code == 201
        query = {
            "name": "quiet",
            "sources": [
                {"name": "q", "kind": "eventlog", "options": {"root": str(root), "stream": "quiet"}}
            ],
            "output_mode": "append",
            "trigger": "1 SECONDS",
        }
        body = {"app": {"file": "/x.py"}, "cluster": "c", "queries": [query]}
        assert stack.client.post("/jobs/quiet/versions", json=body).status_code == 201
        engine = make_engine(stack.database_url, pool_size=1)
        with transaction(make_sessionmaker(engine)) as session:
            job = session.scalar(select(Job).where(Job.name == "quiet"))
            assert job is not None
            run = Run(
                job_id=job.id,
                version_id=job.versions[0].id,
                state="running",
                created_by="t",
                progress={},
            )
            session.add(run)
            session.flush()
            bootstrap = create_run_token(session, run.id, f"run-{run.id}", Scope.BOOTSTRAP)
            run_id = run.id
        engine.dispose()
        keys = {
            "spark.tidegate.api_url": stack.url,
            "spark.tidegate.run_id": str(run_id),
            "spark.tidegate.attempt": "0",
            "spark.tidegate.checkpoint_dir": str(tmp_path / "cp"),
            "spark.tidegate.queries": json.dumps([query]),
        }
        for key, value in keys.items():
            spark.conf.set(key, value)
        # As the worker starts a driver: a single-use bootstrap token, traded at start.
        monkeypatch.delenv(RUN_TOKEN_ENV, raising=False)
        monkeypatch.setenv(BOOTSTRAP_ENV, bootstrap)
        try:
            runtime = Runtime.from_spark(spark)
            again = stack.client.post(
                f"/runs/{run_id}/token", headers={"Authorization": f"Bearer {bootstrap}"}
            )
            assert again.status_code == 401 and "already exchanged" in again.text
            events = read_events(spark, str(root), "quiet")
            started = runtime.start("quiet", events.writeStream.format("noop"))
            progress = wait_until(
                lambda: stack.client.get(f"/runs/{run_id}").json()["progress"],
                lambda p: bool((p.get("quiet") or {}).get("idle_at")),
                90,
            )
            assert stream.latest_offsets() == {0: 0}  # nothing was there to read
            assert progress["quiet"].get("num_input_rows", 0) == 0  # it read nothing
        finally:
            for q in spark.streams.active:
                q.stop()
            for key in keys:
                spark.conf.unset(key)
        assert not started.isActive
