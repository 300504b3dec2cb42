"""A checkpoint root in object storage (``TIDEGATE_CHECKPOINT_ROOT=s3a://bucket/prefix``), the
API and worker side: a client's checkpoint_location confined to ``<root>/<job>`` of the same
bucket and prefix; the API reads a run's checkpoint there (through the s3fs client registered
from TIDEGATE_CHECKPOINT_STORAGE_OPTIONS, against moto's S3 server). Snapshots of such
checkpoints: tests/snapshots/test_object_checkpoints.py. Fast: no Spark."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlalchemy import Engine

from app.auth.service import Principal, Scope
from app.core.config import Settings
from app.core.db import make_sessionmaker, transaction
from app.core.paths import (
    PathOutsideRoot,
    checkpoint_path,
    confine_checkpoint,
    confine_key,
    open_checkpoint,
    read_checkpoint,
)
from app.runs.models import Run
from tests.conftest import ADMIN_TOKEN
from tests.support.api import make_current_run, version_body
from tests.support.s3 import ACCESS_KEY, REGION, SECRET_KEY, create_bucket, moto_server
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.checkpoints.object_dir import ObjectDir, UrlPath

ACTOR = Principal("tester", Scope.OPERATE)
META = '{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}'


@pytest.fixture(scope="module")
def s3() -> Iterator[tuple[str, dict[str, Any]]]:
    """A bucket on moto's S3 server and the s3fs options tidegate gets for it."""
    with moto_server() as endpoint:
        bucket = create_bucket(endpoint)
        options = {
            "endpoint_url": endpoint,
            "key": ACCESS_KEY,
            "secret": SECRET_KEY,
            "client_kwargs": {"region_name": REGION},
        }
        yield bucket, options


@pytest.fixture
def settings(tmp_path: Path, s3: tuple[str, dict[str, Any]]) -> Iterator[Settings]:
    bucket, options = s3
    yield Settings(
        database_url=None,
        admin_token=ADMIN_TOKEN,  # type: ignore[arg-type]
        data_dir=tmp_path / "data",
        checkpoint_root=f"s3a://{bucket}/ck/{tmp_path.name}/",
        checkpoint_storage_options=json.dumps(options),  # type: ignore[arg-type]
        eventlog_roots=str(tmp_path),
        log_json=False,
    )
    cp._STORES.pop("s3a", None)


@pytest.fixture
def client(db: Engine, settings: Settings) -> Iterator[TestClient]:
    from app.api.main import create_app

    with TestClient(
        create_app(settings, engine=db), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    ) as c:
        yield c


def _version(**query: Any) -> dict[str, object]:
    return version_body(
        queries=[
            {
                "name": "q",
                "sources": [{"name": "events", "kind": "eventlog", "options": {"stream": "s"}}],
                "stateful_operators": [{"kind": "tumbling_window"}],
                "output_mode": "append",
                "trigger": "15 seconds",
                **query,
            }
        ]
    )


@pytest.fixture
def job(client: TestClient, cluster: str) -> str:
    assert client.post("/api/v1/jobs", json={"name": "j"}).status_code == 201
    assert client.post("/api/v1/jobs/j/versions", json=_version()).status_code == 201
    return "j"


def _problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert SECRET_KEY not in response.text and ACCESS_KEY not in response.text
    return body


def test_the_root_is_a_url_and_its_options_never_show(tmp_path: Path) -> None:
    settings = Settings(checkpoint_root="s3a://b/ck/", data_dir=tmp_path)
    assert settings.resolved_checkpoint_root == UrlPath("s3a://b/ck")
    assert isinstance(settings.resolved_checkpoint_root, UrlPath)
    assert settings.scratch_root == (tmp_path / "dry-runs").absolute()
    local = Settings(checkpoint_root=str(tmp_path / "c"), data_dir=tmp_path)
    assert local.resolved_checkpoint_root == tmp_path / "c"
    assert local.scratch_root == tmp_path / "c"
    assert Settings(checkpoint_root=f"file://{tmp_path}/c").resolved_checkpoint_root == (
        tmp_path / "c"
    )
    for bad, said in (
        (f"s3a://{ACCESS_KEY}:{SECRET_KEY}@b/ck", "holds credentials"),
        ("gs://b/ck", "not a checkpoint store"),
        ("s3a://", "names no bucket"),
    ):
        with pytest.raises(ValidationError) as caught:
            Settings(checkpoint_root=bad)
        assert said in str(caught.value) and SECRET_KEY not in str(caught.value)
    with pytest.raises(ValidationError) as caught:
        Settings(checkpoint_storage_options=f'["{SECRET_KEY}"]')  # type: ignore[arg-type]
    assert "JSON object" in str(caught.value) and SECRET_KEY not in str(caught.value)
    options = Settings(checkpoint_storage_options=json.dumps({"secret": SECRET_KEY}))  # type: ignore[arg-type]
    assert SECRET_KEY not in repr(options) and SECRET_KEY not in str(options.model_dump())


def test_a_key_is_confined_to_the_jobs_prefix_of_the_same_bucket() -> None:
    root = UrlPath("s3a://b/ck")
    assert confine_checkpoint("q", root, "j") == "s3a://b/ck/j/q"
    assert confine_checkpoint("s3a://b/ck/j/q/", root, "j") == "s3a://b/ck/j/q"
    assert checkpoint_path(root, "j", 7, {"name": "q"}) == "s3a://b/ck/j/7/q"
    for refused in (
        "s3a://b/ck/j",  # the job's folder itself
        "s3a://b/ck/other/q",  # another job's
        "s3a://b/ck/j/../other/q",
        "s3a://b/ck/j//q",
        "s3a://other-bucket/ck/j/q",
        "s3a://b/ck-evil/j/q",  # shares the prefix's text, but is a sibling
        "s3://b/ck/j/q",  # another scheme
        "gs://b/ck/j/q",
        "file:/ck/j/q",
        "/ck/j/q",
        "../q",
        "q/./r",
        "q\x00",
    ):
        with pytest.raises(PathOutsideRoot):
            confine_checkpoint(refused, root, "j")
    with pytest.raises(PathOutsideRoot):
        confine_key("s3a://b/ck", root)


def test_versions_take_a_location_inside_the_jobs_prefix_only(
    client: TestClient, cluster: str, settings: Settings
) -> None:
    root = settings.resolved_checkpoint_root
    assert client.post("/api/v1/jobs", json={"name": "j"}).status_code == 201
    for location in (f"{root}/other/q", "/tmp/q", f"{root}/j/../x/q", "s3://b/q"):
        body = _version(checkpoint_location=location)
        refused = _problem(client.post("/api/v1/jobs/j/versions", json=body), 422)
        assert refused["errors"][0]["field"] == "queries.0.checkpoint_location"
    assert "TIDEGATE_CHECKPOINT_ROOT" in refused["detail"], refused
    made = client.post("/api/v1/jobs/j/versions", json=_version(checkpoint_location="fixed"))
    assert made.status_code == 201, made.text
    assert made.json()["queries"][0]["checkpoint_location"] == f"{root}/j/fixed"


def test_the_api_reads_a_runs_checkpoint_in_s3(
    client: TestClient, job: str, db: Engine, settings: Settings, s3: tuple[str, Any]
) -> None:
    run_id, _ = make_current_run(db, job)
    root = settings.resolved_checkpoint_root
    assert isinstance(root, UrlPath)
    coordinates = client.get(f"/api/v1/jobs/{job}/snapshot-coordinates").json()
    assert coordinates["uncommitted"] == ["q"], coordinates  # nothing there yet
    fs = fsspec.filesystem("s3", **s3[1], skip_instance_cache=True)
    key = f"{root}/{job}/{run_id}/q".split("://", 1)[1]
    fs.pipe_file(f"{key}/metadata", b'{"id":"q-1"}')
    fs.pipe_file(f"{key}/offsets/0", "\n".join(["v1", META, '{"0":4}']).encode())
    fs.pipe_file(f"{key}/commits/0", b'v1\n{"nextBatchWatermarkMs":0}')
    coordinates = client.get(f"/api/v1/jobs/{job}/snapshot-coordinates").json()
    assert coordinates["coordinates"] == [{"job": job, "run": run_id, "query": "q", "batch_id": 0}]
    path = checkpoint_path(root, job, run_id, {"name": "q"})
    with read_checkpoint(root, path) as folder:
        assert isinstance(folder, ObjectDir) and cp.latest_commit_batch(folder) == 0
    with read_checkpoint(root, root / job / "99" / "q") as folder:
        assert folder is None
    with pytest.raises(PathOutsideRoot):
        open_checkpoint(root, UrlPath(f"s3a://{key.split('/')[0]}-other/x"))


def test_a_startpoint_applied_in_s3_is_recorded_and_reverted_by_the_api(
    client: TestClient,
    cluster: str,
    db: Engine,
    settings: Settings,
    s3: tuple[str, Any],
    tmp_path: Path,
) -> None:
    """The driver's rewrite (here through s3fs, as the runtime's through its Hadoop S3A), its
    report, and the revert the API makes in the bucket once the run has stopped."""
    from tidegate_runtime.eventlog import EventLog, NewRecord
    from tidegate_runtime.sources import positions as rt

    stream = EventLog(tmp_path / "log").create_stream("s", 2)
    for p in range(2):
        stream.append(p, [NewRecord(1_000 * i, "k", "1") for i in range(60)])
    job = "r"
    assert client.post("/api/v1/jobs", json={"name": job}).status_code == 201
    options = {"root": str(tmp_path / "log"), "stream": "s"}
    source = {"name": "events", "kind": "eventlog", "options": options}
    made = client.post(f"/api/v1/jobs/{job}/versions", json=_version(sources=[source]))
    assert made.status_code == 201, made.text
    run_id, token = make_current_run(db, job)
    auth = {"Authorization": f"Bearer {token}"}
    root = settings.resolved_checkpoint_root
    ck = f"{root}/{job}/{run_id}/q"
    fs = fsspec.filesystem("s3", **s3[1], skip_instance_cache=True)
    key = ck.split("://", 1)[1]
    fs.pipe_file(f"{key}/metadata", b'{"id":"q-1"}')
    fs.pipe_file(f"{key}/offsets/3", "\n".join(["v1", META, '{"0":50,"1":50}']).encode())
    fs.pipe_file(f"{key}/commits/3", b'v1\n{"nextBatchWatermarkMs":0}')
    url = f"/api/v1/jobs/{job}/startpoints"
    put = client.put(
        url, json={"startpoints": [{"source": "events", "type": "OFFSET", "value": 20}]}
    )
    assert put.status_code == 200, put.text
    directives = client.get(f"/api/v1/runs/{run_id}/directives", headers=auth).json()
    points = [rt.Startpoint.from_json(p) for p in directives["startpoints"]]
    src = directives["sources"]["events"]
    app = rt.apply_to_checkpoint(ck, "q", "events", 0, src["kind"], src["options"], points)
    assert app.batch_id == 3 and json.loads(cp.read_offsets(ck, 3)[1][0]) == {"0": 20, "1": 20}
    report = [
        {
            "query": "q",
            "source": "events",
            "startpoint_ids": app.startpoint_ids,
            "checkpoint": app.checkpoint,
            "batch_id": app.batch_id,
            "before": app.before,
            "after": app.after,
            "original_file": app.original_file,
        }
    ]
    r = client.post(f"/api/v1/runs/{run_id}/startpoints/applied", headers=auth, json=report)
    assert r.status_code == 204, r.text
    applied = client.get(url).json()["applied"][0]
    assert applied["after_offsets"] == {"0": 20, "1": 20}, applied
    with transaction(make_sessionmaker(db)) as session:
        session.get_one(Run, run_id).state = "stopped"
    r = client.post(f"{url}/{applied['id']}/revert")
    assert r.status_code == 200, r.text
    assert json.loads(cp.read_offsets(ck, 3)[1][0]) == {"0": 50, "1": 50}  # put back in S3
