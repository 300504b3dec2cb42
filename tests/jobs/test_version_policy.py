"""Operate is not code execution: an operate token may only create versions whose files lie
under the admin's app roots and whose conf loads no other code; an admin token may do all."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.core.config import Settings
from tests.support.api import version_body

DENIED = [
    "spark.jars",
    "spark.jars.packages",
    "spark.driver.extraJavaOptions",
    "spark.executor.extraJavaOptions",
    "spark.driver.extraClassPath",
    "spark.executor.extraLibraryPath",
    "spark.yarn.appMasterEnv.LD_PRELOAD",
    "spark.executorEnv.PYTHONSTARTUP",
    "spark.redaction.regex",
    "spark.sql.redaction.string.regex",
    "spark.driver.userClassPathFirst",
    "spark.files",
    "spark.submit.pyFiles",
    "spark.archives",
    "spark.pyspark.python",
    "spark.pyspark.driver.python",
    "spark.plugins",
    "spark.extraListeners",
    "spark.sql.extensions",
    "spark.hadoop.fs.s3a.impl",
    # Issue 26, #1: keys that load code or images, none of them on the old deny-list.
    "spark.kubernetes.container.image",
    "spark.kubernetes.driver.podTemplateFile",
    "spark.yarn.dist.jars",
    "spark.yarn.dist.pyFiles",
    "spark.sql.hive.metastore.jars",
    "spark.python.daemon.module",
    "spark.python.worker.module",
    "spark.sql.catalog.evil",
    "spark.shuffle.manager",
    "spark.kryo.registrator",
    "spark.ui.filters",
    "Spark.Jars",  # not a key Spark reads, and not one on the allow-list either
    "spark.sql.streaming.stateStore.providerClass",  # with a class of the caller's choosing
    # Issue 51 M1: under spark.sql.*, keys that choose a program or load a class.
    "spark.sql.execution.pyspark.python",
    "spark.sql.parquet.output.committer.class",
    "spark.sql.cache.serializer",
    "spark.sql.adaptive.customCostEvaluatorClass",
    "spark.sql.sources.commitProtocolClass",
]
ALLOWED = {
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.executor.memory": "2g",
    "spark.driver.cores": "1",
    "spark.dynamicAllocation.enabled": "false",
    "spark.sql.streaming.stateStore.providerClass": (
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    ),
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}


@pytest.fixture
def apps(tmp_path: Path, settings: Settings) -> Path:
    root = tmp_path / "apps"
    root.mkdir()
    (root / "job.py").write_text("print('hi')\n")
    settings.app_roots = f"{root}, s3a://bucket/apps"
    return root


@pytest.fixture
def operate(client: TestClient, cluster: str, token_for: Callable[[str], str]) -> TestClient:
    assert client.post("/api/v1/jobs", json={"name": "j"}).status_code == 201
    client.headers["Authorization"] = f"Bearer {token_for('operate')}"
    return client


def _version(client: TestClient, file: str, **over: object) -> tuple[int, dict[str, object]]:
    over.setdefault("app", {"file": file})
    r = client.post("/api/v1/jobs/j/versions", json=version_body(**over))
    if r.status_code >= 400:
        assert r.headers["content-type"].startswith("application/problem+json")
    return r.status_code, r.json()


def test_without_app_roots_operate_cannot_create_versions(operate: TestClient) -> None:
    status, problem = _version(operate, "/opt/pipelines/windowed_counts.py")
    assert status == 403
    assert "TIDEGATE_APP_ROOTS" in str(problem["detail"]) and "app.file" in str(problem["detail"])


def test_operate_runs_only_files_under_an_app_root(
    operate: TestClient, apps: Path, tmp_path: Path
) -> None:
    assert _version(operate, str(apps / "job.py"))[0] == 201
    assert _version(operate, f"file://{apps / 'job.py'}")[0] == 201
    assert _version(operate, "s3a://bucket/apps/job.py")[0] == 201
    outside = tmp_path / "evil.py"
    outside.write_text("import os\n")
    (apps / "link.py").symlink_to(outside)
    for file in (
        str(outside),
        f"{apps}/../evil.py",
        str(apps / "link.py"),  # a link inside the root to a file outside it
        "/proc/self/environ",
        "s3a://bucket/other/job.py",
        "https://attacker.example/job.py",
        str(apps),
    ):
        status, problem = _version(operate, file)
        assert status == 403, file
        assert file in str(problem["detail"])
    app = {"file": str(apps / "job.py"), "py_files": [str(outside)]}
    status, problem = _version(operate, str(apps / "job.py"), app=app)
    assert status == 403 and "app.py_files" in str(problem["detail"])


@pytest.mark.parametrize(
    "template",
    [
        "file://{apps}/%2e%2e/%2e%2e/usr/lib/python3.11/timeit.py",
        "local://{apps}/%2e%2e/%2e%2e/usr/lib/python3.11/timeit.py",
        "file:///tmp/evil.py?/../..{apps}/job.py",
        "file:///tmp/evil.py#/../..{apps}/job.py",
        "file://tmp{apps}/job.py",
        "{apps}/job.py?x",
        "{apps}/a\\..\\..\\evil.py",
        "{apps}/./job.py",
        "{apps}//job.py",
    ],
)
def test_issue_51_c1_a_path_spark_would_read_otherwise_is_refused(
    operate: TestClient, apps: Path, template: str
) -> None:
    file = template.format(apps=apps)
    status, problem = _version(operate, file)
    assert status == 403, (file, problem)
    assert file in str(problem["detail"]) and "app root" in str(problem["detail"])
    job = str(apps / "job.py")
    status, problem = _version(operate, job, app={"file": job, "py_files": [file]})
    assert status == 403 and "app.py_files" in str(problem["detail"]), problem


def test_the_version_stores_and_serves_the_canonical_form_that_was_checked(
    operate: TestClient, apps: Path
) -> None:
    (apps / "lib").mkdir()
    (apps / "lib" / "dep.py").write_text("")
    (apps / "alias.py").symlink_to(apps / "job.py")
    app = {"file": f"file://localhost{apps}/alias.py", "py_files": [f"local://{apps}/lib/dep.py"]}
    status, body = _version(operate, "", app=app)
    assert status == 201, body
    assert body["app"]["file"] == str(apps / "job.py")
    assert body["app"]["py_files"] == [f"local:{apps}/lib/dep.py"]
    shown = operate.get(f"/api/v1/jobs/j/versions/{body['number']}").json()
    assert shown["app"] == body["app"]


@pytest.mark.parametrize("key", DENIED)
def test_operate_may_not_set_conf_that_loads_code(
    operate: TestClient, apps: Path, key: str
) -> None:
    status, problem = _version(operate, str(apps / "job.py"), conf={key: "x"})
    assert status == 403
    assert f"conf '{key}'" in str(problem["detail"]) and "admin" in str(problem["detail"])


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("spark.task.cpus", "${env:AWS_SECRET_ACCESS_KEY}"),
        ("spark.driver.maxResultSize", "${spark.hadoop.fs.s3a.secret.key}"),
        ("spark.sql.session.timeZone", "${system:user.home}"),
        ("spark.executor.memory", "2g${env:X}"),
        ("spark.task.cpus", "two"),
        ("spark.executor.memory", "lots"),
        ("spark.network.timeout", "forever"),
        ("spark.dynamicAllocation.enabled", "yes"),
        ("spark.sql.session.timeZone", "Not/AZone"),
        ("spark.sql.streaming.stateStore.compression.codec", "org.evil.Codec"),
    ],
)
def test_issue_51_h1_conf_values_are_typed_and_never_substituted(
    operate: TestClient, apps: Path, key: str, value: str
) -> None:
    status, problem = _version(operate, str(apps / "job.py"), conf={key: value})
    assert status == 403, problem
    assert f"conf '{key}'" in str(problem["detail"])
    assert value not in str(problem), "the refusal does not echo the value"


def test_operate_may_tune_what_the_allow_list_names(operate: TestClient, apps: Path) -> None:
    status, body = _version(operate, str(apps / "job.py"), conf=ALLOWED)
    assert status == 201, body


def test_every_piece_of_a_list_spark_splits_must_be_under_a_root(
    operate: TestClient, apps: Path
) -> None:
    """Issue 26, #1: a comma made one entry two files for Spark, the second anywhere."""
    job = str(apps / "job.py")
    for file in (f"{job},/tmp/evil.zip", f"{job},https://attacker.example/x.py", f"{job},"):
        status, problem = _version(operate, file)
        assert status == 403, file
    for entry in (f"{job},/tmp/evil.zip", ",https://attacker.example/x.py"):
        status, problem = _version(operate, job, app={"file": job, "py_files": [entry]})
        assert status == 422, problem  # one file per entry, whoever asks
        assert "comma" in str(problem)


@pytest.mark.parametrize(
    "url",
    [
        "s3a://bucket/apps/../../other/x.py",
        "s3a://bucket/apps/./../other/x.py",
        "s3a://bucket/apps/%2e%2e/other/x.py",
        "s3a://bucket/apps/%2E%2E/%2e%2e/x.py",
        "s3a://bucket/apps/..%2fother/x.py",
        "s3a://bucket/apps/x.py?../../other",
        "s3a://other-bucket/apps/x.py",
        "s3a://bucket/apps",
        "s3a://bucket/apps/",
    ],
)
def test_a_url_that_normalises_outside_its_root_is_refused(
    operate: TestClient, apps: Path, url: str
) -> None:
    assert _version(operate, url)[0] == 403, url


def test_admin_may_create_any_version(
    client: TestClient, cluster: str, apps: Path, tmp_path: Path
) -> None:
    assert client.post("/api/v1/jobs", json={"name": "j"}).status_code == 201
    status, _ = _version(client, str(tmp_path / "anywhere.py"), conf={"spark.jars": "/opt/x.jar"})
    assert status == 201
