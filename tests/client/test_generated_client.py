"""The generated Python client (openapi/clients/python) against the live service: what a
dashboard written in Python would do, through typed models rather than dicts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.client.conftest import Live
from tests.conftest import ADMIN_TOKEN

CLIENT = Path(__file__).resolve().parents[2] / "openapi" / "clients" / "python"


@pytest.fixture
def api(live: Live, cli_env: Path):  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(CLIENT))
    try:
        from tidegate_client import AuthenticatedClient

        with AuthenticatedClient(base_url=live.url, token=ADMIN_TOKEN) as client:
            yield client
    finally:
        sys.path.remove(str(CLIENT))


def test_generated_client_round_trip(api, version_file: Path) -> None:  # type: ignore[no-untyped-def]
    import yaml
    from tidegate_client.api.clusters import create_cluster
    from tidegate_client.api.jobs import create_job, create_version, get_job, list_jobs
    from tidegate_client.api.operations import get_operation, submit_job
    from tidegate_client.models import (
        ClusterCreate,
        JobCreate,
        JobResponse,
        OperationResponse,
        PageJobResponse,
        SubmitBody,
        VersionCreate,
    )

    cluster = ClusterCreate.from_dict(
        {"name": "local", "kind": "livy", "url": "http://127.0.0.1:9"}
    )
    assert create_cluster.sync_detailed(client=api, body=cluster).status_code == 201
    job = create_job.sync(client=api, body=JobCreate(name="gen", description="typed"))
    assert isinstance(job, JobResponse) and job.state == "idle" and job.revision == 1

    body = VersionCreate.from_dict(yaml.safe_load(version_file.read_text()))
    version = create_version.sync(job="gen", client=api, body=body)
    assert version is not None and getattr(version, "number", None) == 1

    page = list_jobs.sync(client=api)
    assert isinstance(page, PageJobResponse) and [j.name for j in page.items] == ["gen"]
    assert get_job.sync_detailed(job="nope", client=api).status_code == 404

    op = submit_job.sync(
        job="gen", client=api, body=SubmitBody(version=1), idempotency_key="dash-1"
    )
    assert isinstance(op, OperationResponse) and op.state == "pending" and op.kind == "submit"
    again = get_operation.sync(op_id=op.id, client=api)
    assert isinstance(again, OperationResponse) and again.idempotency_key == "dash-1"
