"""Audit retention: the worker loop deletes events older than TIDEGATE_AUDIT_RETENTION, in
small batches, and keeps the rest."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlalchemy import Engine, func, select

from app.audit import service as audit
from app.audit.models import AuditEvent
from app.core.config import Settings
from app.core.db import make_sessionmaker, transaction, utcnow
from app.worker.core.context import WorkerContext
from app.worker.loop import Worker


def _events(db: Engine, ages_days: list[int]) -> None:
    with transaction(make_sessionmaker(db)) as session:
        for n, days in enumerate(ages_days):
            session.add(
                AuditEvent(
                    at=utcnow() - timedelta(days=days, minutes=n),
                    actor="t",
                    action=f"age.{days}",
                    result="ok",
                    status_code=200,
                )
            )


def _ages(db: Engine) -> list[str]:
    with make_sessionmaker(db)() as session:
        return sorted(session.scalars(select(AuditEvent.action)))


def test_the_worker_loop_deletes_events_past_the_retention(db: Engine, tmp_path: Path) -> None:
    _events(db, [400, 100, 31, 29, 0])
    settings = Settings(data_dir=tmp_path, log_json=False, audit_retention="30d")
    ctx = WorkerContext(
        factory=make_sessionmaker(db), settings=settings, worker_id="w", poll_seconds=0.01
    )
    Worker(ctx, concurrency=1, retention_every=3600).retention(force=True)
    assert _ages(db) == ["age.0", "age.29"]


def test_a_backlog_goes_in_small_batches_over_several_sweeps(db: Engine) -> None:
    _events(db, [100] * 7 + [1])
    factory = make_sessionmaker(db)
    assert audit.sweep(factory, timedelta(days=90), batch=2, max_batches=2) == 4
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(AuditEvent)) == 4
    assert audit.sweep(factory, timedelta(days=90), batch=2, max_batches=2) == 3
    assert audit.sweep(factory, timedelta(days=90), batch=2, max_batches=2) == 0
    assert _ages(db) == ["age.1"]


@pytest.mark.parametrize("value", ["forever", "0d", "90 days", ""])
def test_a_retention_that_is_not_a_duration_is_refused(value: str) -> None:
    with pytest.raises(ValidationError, match="audit_retention"):
        Settings(audit_retention=value)


def test_the_default_keeps_90_days() -> None:
    assert Settings().audit_retention_delta == timedelta(days=90)
