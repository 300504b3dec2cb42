"""The runtime zip the worker adds to every submission (app/worker/core/runtime_bundle.py)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import kafka
import pytest

import tidegate_runtime
from app.backends.base import PermanentBackendError
from app.core.config import Settings
from app.worker.core import runtime_bundle, submission
from app.worker.core.context import WorkerContext

RUNTIME = Path(tidegate_runtime.__file__).parent
KAFKA = Path(kafka.__file__).parent


def test_the_zip_holds_the_runtime_and_kafka_python_and_nothing_else(tmp_path: Path) -> None:
    path = runtime_bundle.runtime_bundle(tmp_path)
    names = zipfile.ZipFile(path).namelist()
    # Every module, its parts' folders (driver/, sources/, ...) included: a driver imports them.
    expected = sorted(
        f"tidegate_runtime/{p.relative_to(RUNTIME).as_posix()}" for p in RUNTIME.rglob("*.py")
    )
    assert sorted(n for n in names if n.startswith("tidegate_runtime/") and n.endswith(".py")) == (
        expected
    )
    parts = {n.split("/")[1] for n in expected if n.count("/") == 2}
    assert {"driver", "sources", "checkpoints", "packaging"} <= parts, parts
    assert all(f"tidegate_runtime/{part}/__init__.py" in names for part in parts)
    assert "tidegate_runtime/py.typed" in names
    kafka_files = sorted(
        f"kafka/{p.relative_to(KAFKA).as_posix()}"
        for p in KAFKA.rglob("*")
        if p.suffix in (".py", ".json")
    )
    assert sorted(n for n in names if n.startswith("kafka/")) == kafka_files
    assert len(kafka_files) > 50 and "kafka/consumer/group.py" in kafka_files
    assert all(n.startswith(("tidegate_runtime/", "kafka/")) for n in names), names


def test_same_content_same_name_and_bytes(tmp_path: Path) -> None:
    """Deterministic: two workers (or two releases with the same runtime) write one file."""
    assert runtime_bundle.build_zip() == runtime_bundle.build_zip()
    first = runtime_bundle.runtime_bundle(tmp_path / "a")
    second = runtime_bundle.runtime_bundle(tmp_path / "b")
    assert first.name == second.name and first.read_bytes() == second.read_bytes()
    assert first.name.startswith("tidegate_runtime-") and first.suffix == ".zip"
    assert not [p for p in (tmp_path / "a").iterdir() if p != first], "temporary files left"


def test_concurrent_builds_leave_one_complete_file(tmp_path: Path) -> None:
    runtime_bundle._built.clear()
    paths: list[Path] = []

    def build() -> None:
        paths.append(runtime_bundle.runtime_bundle(tmp_path))

    threads = [threading.Thread(target=build) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(paths)) == 1
    assert zipfile.ZipFile(paths[0]).testzip() is None
    assert list(tmp_path.iterdir()) == [paths[0]]


def test_a_bundle_deleted_under_the_worker_is_written_again(tmp_path: Path) -> None:
    path = runtime_bundle.runtime_bundle(tmp_path)
    path.unlink()
    assert runtime_bundle.runtime_bundle(tmp_path) == path and path.exists()


def test_a_python_without_tidegate_imports_the_runtime_from_the_zip(tmp_path: Path) -> None:
    """``-I`` (isolated) and ``-S`` (no site-packages): only the stdlib and the zip."""
    path = runtime_bundle.runtime_bundle(tmp_path)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import tidegate_runtime.checkpoints.durable_files as f;"
        "print(f.__file__)\ntry:\n import app\nexcept ImportError:\n print('no app')\n"
        "import kafka, tidegate_runtime.sources.kafka_client as k;"
        "k.ClientResolver({'kafka.bootstrap.servers': 'h:9092'}); print(kafka.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.split("\n")
    assert out[0] == f"{path}/tidegate_runtime/checkpoints/durable_files.py"
    assert out[1] == "no app"
    assert out[2] == f"{path}/kafka/__init__.py"  # the Kafka resolver's client ships too


def test_every_submission_carries_the_zip_first(tmp_path: Path) -> None:
    ctx = cast(Any, SimpleNamespace(settings=Settings(data_dir=tmp_path)))
    version = SimpleNamespace(app={"file": "/apps/job.py", "py_files": ["/apps/team_lib.zip"]})
    files = submission.py_files(cast(WorkerContext, ctx), version)
    assert files[1:] == ["/apps/team_lib.zip"]
    assert Path(files[0]).parent == tmp_path.absolute() / "runtime"
    assert zipfile.ZipFile(files[0]).getinfo("tidegate_runtime/driver/runtime.py")


def test_the_data_source_planners_get_the_zip_on_their_path(tmp_path: Path) -> None:
    """Python processes that plan a data source see only the executor environment: the zip
    goes ahead of a PYTHONPATH the version set, and a URL (not a local path) is left out."""
    ctx = cast(Any, SimpleNamespace(settings=Settings(data_dir=tmp_path)))
    version = SimpleNamespace(
        app={"file": "/apps/job.py", "args": ["--x", "1"], "py_files": ["s3a://b/lib.zip"]}
    )
    conf = {"spark.executorEnv.PYTHONPATH": "/opt/team", "spark.sql.shuffle.partitions": "2"}
    spec = submission.spec(cast(WorkerContext, ctx), version, "tag-1", conf)
    bundle = spec.py_files[0]
    assert spec.py_files == [bundle, "s3a://b/lib.zip"] and spec.args == ["--x", "1"]
    assert spec.conf["spark.executorEnv.PYTHONPATH"] == f"{bundle}:/opt/team"
    assert spec.conf["spark.sql.shuffle.partitions"] == "2"
    assert submission.python_path_conf(["file:/z.zip"], {}) == {
        "spark.executorEnv.PYTHONPATH": "/z.zip"
    }


def test_an_unwritable_bundle_folder_is_a_clear_permanent_error(tmp_path: Path) -> None:
    blocker = tmp_path / "runtime"
    blocker.write_text("a file where the folder should be")
    ctx = cast(Any, SimpleNamespace(settings=Settings(data_dir=tmp_path)))
    version = SimpleNamespace(app={"file": "/apps/job.py"})
    with pytest.raises(PermanentBackendError) as refused:
        submission.py_files(cast(WorkerContext, ctx), version)
    assert str(blocker) in str(refused.value)
    assert "TIDEGATE_RUNTIME_BUNDLE_DIR" in str(refused.value)


def test_the_runtime_folder_is_the_one_made_for_others_to_read(tmp_path: Path) -> None:
    """Issue 51 L1: drivers of another OS user import the runtime from this folder, so tidegate
    makes it 0755 and the zip 0644 whatever the umask; a folder that exists keeps its mode."""
    old = os.umask(0o077)
    try:
        path = runtime_bundle.runtime_bundle(tmp_path / "made")
        kept = tmp_path / "kept"
        kept.mkdir()
        kept.chmod(0o750)
        runtime_bundle.runtime_bundle(kept)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o755
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert stat.S_IMODE(kept.stat().st_mode) == 0o750
