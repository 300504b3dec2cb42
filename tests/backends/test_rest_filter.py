"""A standalone master whose REST submission server is protected by Spark's own filter
(``spark.master.rest.filters=org.apache.spark.ui.JWSFilter``, shipped in pyspark's jars):
a cluster registered with ``credentials.authorization`` passes it on every call (readiness,
submit, status, kill); without credentials the master refuses tidegate. A real master, no
stand-in: only the master is started (no worker, no driver ever runs)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from fastapi.testclient import TestClient

from app.backends.base import PermanentBackendError, SubmitSpec
from app.backends.registry import backend_for
from app.clusters.models import Cluster
from app.devtools.spark_local import HOST, find_free_port, spark_env
from tests.support.e2e import app_path
from tests.support.waiting import stop_process
from tidegate_runtime.packaging.pyspark_zip import spark_home

pytestmark = pytest.mark.e2e

FILTER = "org.apache.spark.ui.JWSFilter"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jws(key: bytes, claims: dict[str, object]) -> str:
    """A compact HS256 JWS, what JWSFilter verifies."""
    signing = (
        _b64url(json.dumps({"alg": "HS256"}).encode()) + "." + _b64url(json.dumps(claims).encode())
    )
    signature = hmac.new(key, signing.encode(), hashlib.sha256).digest()
    return signing + "." + _b64url(signature)


@dataclass
class GuardedMaster:
    rest_url: str
    master_url: str
    ui_url: str
    token: str


@pytest.fixture(scope="module")
def guarded_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GuardedMaster]:
    work = tmp_path_factory.mktemp("guarded-master")
    key = secrets.token_bytes(32)
    rpc, rest, ui = find_free_port(), find_free_port(), find_free_port()
    props = work / "spark.properties"
    props.write_text(
        "\n".join(
            [
                "spark.master.rest.enabled=true",
                f"spark.master.rest.port={rest}",
                "spark.port.maxRetries=0",
                f"spark.master.rest.filters={FILTER}",
                f"spark.{FILTER}.param.secretKey={_b64url(key)}",
            ]
        )
        + "\n"
    )
    log = (work / "master.log").open("wb")
    proc = subprocess.Popen(
        [
            str(spark_home() / "bin" / "spark-class"),
            "org.apache.spark.deploy.master.Master",
            "--host",
            HOST,
            "--port",
            str(rpc),
            "--webui-port",
            str(ui),
            "--properties-file",
            str(props),
        ],
        env=spark_env(),
        cwd=work,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    master = GuardedMaster(
        f"http://{HOST}:{rest}",
        f"spark://{HOST}:{rpc}",
        f"http://{HOST}:{ui}",
        jws(key, {"sub": "tidegate"}),
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, (work / "master.log").read_text()[-3000:]
            try:
                r = httpx.get(
                    f"{master.rest_url}/v1/submissions/readyz",
                    headers={"Authorization": f"Bearer {master.token}"},
                    timeout=2,
                )
                if r.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, (work / "master.log").read_text()[-3000:]
            time.sleep(0.5)
        yield master
    finally:
        stop_process(proc)


def _cluster(master: GuardedMaster, authorization: str | None) -> Cluster:
    return Cluster(
        name="guarded",
        kind="standalone",
        url=master.rest_url,
        master_url=master.master_url,
        ui_url=master.ui_url,
        credentials={"authorization": authorization} if authorization else None,
    )


def test_the_master_refuses_calls_without_the_token(guarded_master: GuardedMaster) -> None:
    r = httpx.get(f"{guarded_master.rest_url}/v1/submissions/readyz")
    assert r.status_code == 403
    wrong = jws(secrets.token_bytes(32), {"sub": "intruder"})
    r = httpx.get(
        f"{guarded_master.rest_url}/v1/submissions/readyz",
        headers={"Authorization": f"Bearer {wrong}"},
    )
    assert r.status_code == 403


def test_registered_credentials_are_sent_on_every_call(guarded_master: GuardedMaster) -> None:
    backend = backend_for(_cluster(guarded_master, f"Bearer {guarded_master.token}"))
    assert backend.ready()
    spec = SubmitSpec(tag="tidegate-filter-check", file=app_path("succeed.py"))
    driver = backend.submit(spec)
    # No worker: the driver waits for one, which is all this needs to show.
    assert backend.status(driver).raw_state == "SUBMITTED"
    backend.kill(driver)
    assert backend.status(driver).raw_state == "KILLED"


def test_without_credentials_tidegate_is_refused(guarded_master: GuardedMaster) -> None:
    backend = backend_for(_cluster(guarded_master, None))
    assert not backend.ready()
    with pytest.raises(PermanentBackendError, match=r"HTTP 403 .*credentials\.authorization"):
        backend.submit(SubmitSpec(tag="tidegate-filter-refused", file=app_path("succeed.py")))


def test_the_api_probes_with_the_stored_credentials(
    client: TestClient, guarded_master: GuardedMaster
) -> None:
    """Through the API and the database: the stored secret is used, and never shown."""
    base = {
        "kind": "standalone",
        "url": guarded_master.rest_url,
        "master_url": guarded_master.master_url,
        "ui_url": guarded_master.ui_url,
    }
    secret = f"Bearer {guarded_master.token}"
    r = client.post(
        "/api/v1/clusters",
        json={**base, "name": "guarded", "credentials": {"authorization": secret}},
    )
    assert r.status_code == 201, r.text
    assert client.post("/api/v1/clusters", json={**base, "name": "open"}).status_code == 201
    guarded = client.get("/api/v1/clusters/guarded")
    assert guarded.json()["reachable"] is True and guarded.json()["has_credentials"] is True
    assert guarded_master.token not in guarded.text
    refused = client.get("/api/v1/clusters/open").json()
    assert refused["reachable"] is False, refused
    for path in ("/api/v1/clusters", "/api/v1/events"):
        assert guarded_master.token not in client.get(path).text
