"""The version an operation starts, read once when the operation begins and handed down to
every step (plan, dry run, standby, start), so no step looks it up again by number."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from sqlalchemy.orm import Session

from app.core.errors import TidegateError
from app.jobs.models import Job, JobVersion
from app.jobs.service import get_version
from app.worker.core.context import WorkerContext
from app.worker.core.steps import OperationFailed


@dataclass(frozen=True)
class Target:
    """A job's version to start: the job's name (paths, messages) and the version's row,
    detached from any session (its columns and its cluster, loaded with it)."""

    job_name: str
    version: JobVersion

    @cached_property
    def number(self) -> int:
        return self.version.number

    @cached_property
    def query_names(self) -> list[str]:
        return [q["name"] for q in self.version.queries]

    def row(self, session: Session) -> JobVersion:
        """The version's row in ``session``, for a write that refers to it."""
        row = session.get(JobVersion, self.version.id)
        assert row is not None  # a version is never deleted while a run of its job may start
        return row


def read_target(ctx: WorkerContext, job_id: int, number: int) -> Target:
    """Version ``number`` of the job, read once for the operation's steps."""
    with ctx.factory() as session:
        job = session.get(Job, job_id)
        assert job is not None
        try:
            version = get_version(session, job.name, number)
        except TidegateError as exc:
            raise OperationFailed(exc.detail) from None
        session.expunge(version)
        return Target(job.name, version)
