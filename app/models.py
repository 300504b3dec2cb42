"""Every table, imported in one place so Alembic and tests see the whole metadata."""

from app.audit.models import AuditEvent
from app.auth.models import ApiToken
from app.clusters.models import Cluster
from app.core.db import Base
from app.jobs.models import Job, JobVersion
from app.operations.models import Operation
from app.runs.models import QueryProgress, Run, RunTransition
from app.snapshots.models import Snapshot, SnapshotRetention, SnapshotUse
from app.startpoints.models import Startpoint, StartpointApplication
from app.ui.models import UiSession
from app.worker.core.models import WorkerHeartbeat

__all__ = [
    "ApiToken",
    "AuditEvent",
    "Base",
    "Cluster",
    "Job",
    "JobVersion",
    "Operation",
    "QueryProgress",
    "Run",
    "RunTransition",
    "Snapshot",
    "SnapshotRetention",
    "SnapshotUse",
    "Startpoint",
    "StartpointApplication",
    "UiSession",
    "WorkerHeartbeat",
]
