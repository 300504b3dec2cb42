"""The differential test of issue 51, C1: paths generated to disagree between readers
(percent-encodings, dot segments, links, schemes, authorities, queries, fragments, lists) go
through tidegate's policy and through Spark's own resolution of a Python app file
(``Utils.resolveURI`` then ``PythonRunner.formatPath``, what spark-submit does before it runs
the file, called in the JVM of a real local SparkSession). Any path the policy lets through
must be one Spark opens at exactly the canonical path that was checked, under the root; the
raw forms an attacker sent (the exploit's own) must be refused. The same through a real
``spark-submit``, which runs a script that reports which file ran, is the last test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from app.backends.standalone import _as_uri
from app.jobs.app_paths import canonical

pytestmark = pytest.mark.spark

SEGMENTS = [
    "..",
    ".",
    "",
    "apps",
    "job.py",
    "link",
    "evil.py",
    "%2e%2e",
    "%2E%2e",
    "%2f",
    "a%20b",
    "x.py?",
    "?/..",
    "#/..",
    "x.py#frag",
    "a\\..",
    "a,b",
    "é",
    ";x",
]
PREFIXES = [
    "",
    "file:",
    "file://",
    "file:///",
    "file://localhost",
    "file://tmp",
    "local:",
    "local://",
    "local:///",
    "hdfs://nn",
]


def spark_opens(spark: SparkSession, path: str) -> str | None:
    """The local file spark-submit runs for the Python app ``path`` (None: Spark refuses)."""
    jvm: Any = spark._jvm  # type: ignore[attr-defined]
    try:
        resolved = jvm.org.apache.spark.util.Utils.resolveURI(path).toString()
        return str(jvm.org.apache.spark.deploy.PythonRunner.formatPath(resolved, False))
    except Exception:  # py4j raises Spark's refusal as a generic error
        return None


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("paths")
    (base / "apps" / "lib").mkdir(parents=True)
    (base / "apps" / "job.py").write_text("")
    (base / "apps" / "lib" / "job.py").write_text("")
    (base / "evil.py").write_text("")
    (base / "apps" / "link").symlink_to(base)  # a link inside the root to its parent
    return base


def _inside(opened: str, root: Path) -> bool:
    real = os.path.realpath(opened)
    return real.startswith(str(root) + "/")


@settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.sampled_from(PREFIXES), st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=5))
def test_what_the_policy_lets_through_is_what_spark_opens(
    spark: SparkSession, tree: Path, prefix: str, segments: list[str]
) -> None:
    root = tree / "apps"
    raw = prefix + str(root) + "/" + "/".join(segments)
    form = canonical(raw, [str(root)])
    if isinstance(form, str):
        # spark-submit and the Livy runner get the form as stored; the standalone backend
        # sends a path as a file: URI (app/backends/standalone.py::_as_uri).
        for submitted in (form, _as_uri(form, "file")):
            opened = spark_opens(spark, submitted)
            assert opened == form.removeprefix("local:"), (raw, submitted, opened)
            assert _inside(opened, root), (raw, submitted, opened)


# The finding's forms. Spark runs the first four outside the root (timeit.py, /tmp/evil.py);
# the last two it reads differently from their text (an authority, a literal '%2e%2e').
EXPLOITS = [
    ("file://{root}/{up}{python_lib}/timeit.py", True),
    ("local://{root}/{up}{python_lib}/timeit.py", True),
    ("file:///tmp/evil.py?/../..{root}/x.py", True),
    ("file:///tmp/evil.py#/../..{root}/x.py", True),
    ("file://tmp{root}/job.py", False),
    ("{root}/%2e%2e/evil.py", False),
]


@pytest.mark.parametrize(("exploit", "outside"), EXPLOITS)
def test_the_c1_exploits_are_refused(
    spark: SparkSession, tree: Path, exploit: str, outside: bool
) -> None:
    root = tree / "apps"
    (tree / "python").mkdir(exist_ok=True)
    (tree / "python" / "timeit.py").write_text("")
    up = "/".join(["%2e%2e"] * (len(root.parts) - 1))  # from the root up to /
    raw = exploit.format(root=root, up=up, python_lib=tree / "python").replace(
        "/tmp/evil.py", str(tree / "evil.py")
    )
    assert not isinstance(canonical(raw, [str(root)]), str), raw
    if outside:  # the finding, as Spark reads it: refusing it keeps the token in the root
        opened = spark_opens(spark, raw)
        assert opened is not None and os.path.isfile(opened), (raw, opened)
        assert not _inside(opened, root), (raw, opened)


def test_spark_submit_runs_the_file_the_policy_checked(tree: Path, tmp_path: Path) -> None:
    """A real spark-submit (local mode) of the stored form: the script that ran says where it
    is, and it is the canonical path, through a link inside the root."""
    root = tree / "apps"
    report = tmp_path / "ran.txt"
    (root / "lib" / "job.py").write_text(
        f"import os\nopen({str(report)!r}, 'w').write(os.path.realpath(__file__))\n"
    )
    (root / "alias.py").symlink_to(root / "lib" / "job.py")
    form = canonical(f"file://{root}/alias.py", [str(root)])
    assert form == f"{root}/lib/job.py"
    spark_submit = Path(sys.executable).parent / "spark-submit"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        [str(spark_submit), "--master", "local[1]", "--conf", "spark.ui.enabled=false", form],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert report.read_text() == form
