"""Bytecode in Spark's Python zips (tidegate_runtime/packaging/pyspark_zip.py): a process that
imports from the zip compiles nothing, reads the same modules, and falls back to the source wherever
the bytecode does not match it; the installed Spark (``make install``) has it. Each check runs a
fresh Python whose ``compile`` counts the sources it compiles, as Spark's Python
processes would import (the zips first on the path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tidegate_runtime.packaging import pyspark_zip

# Import `modules` with `zips` first on the path; print what the zip importer compiled from
# source, each module's __file__ and its `answer`.
_PROBE = """
import builtins, json, sys
compiled = []
_compile = builtins.compile
def counting(source, filename, *args, **kw):
    compiled.append(str(filename))
    return _compile(source, filename, *args, **kw)
builtins.compile = counting
import importlib
files, answers = {}, {}
for name in sys.argv[1].split(","):
    module = importlib.import_module(name)
    files[name], answers[name] = module.__file__, getattr(module, "answer", None)
# (sorted and once each: the zip importer compiles a module's source twice, for its file name
# and for its code)
print(json.dumps({"compiled": sorted({f for f in compiled if ".zip" in f}), "files": files,
                  "answers": answers}))
"""


def probe(zips: list[Path], modules: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(z) for z in zips)}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, ",".join(modules)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def make_zip(path: Path, files: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


SOURCES = {
    "pkg/__init__.py": "answer = 'package'\n",
    "pkg/mod.py": "from pkg import helper\nanswer = helper.value() * 2\n",
    "pkg/helper.py": "def value():\n    return 21\n",
    "pkg/tests/test_never_run.py": "answer = 0\n",
    "pkg/broken.py": "def broken(:\n",
}


def test_a_precompiled_zip_is_imported_without_compiling_and_reads_the_same(
    tmp_path: Path,
) -> None:
    archive = make_zip(tmp_path / "lib.zip", SOURCES)
    before = probe([archive], ["pkg.mod"])
    assert len(before["compiled"]) == 3  # pkg, pkg.mod, pkg.helper from source

    added = pyspark_zip.precompile(archive)

    # each importable module once; tests are never imported, a broken file stays as it was
    assert added == 3
    with zipfile.ZipFile(archive) as zf:
        names = set(zf.namelist())
        assert {"pkg/__init__.pyc", "pkg/mod.pyc", "pkg/helper.pyc"} <= names
        assert "pkg/broken.pyc" not in names and "pkg/tests/test_never_run.pyc" not in names
        assert all(zf.read(n) == t.encode() for n, t in SOURCES.items())  # sources kept
    after = probe([archive], ["pkg.mod"])
    assert after["compiled"] == []
    assert after["answers"] == before["answers"] == {"pkg.mod": 42}
    assert after["files"]["pkg.mod"] == f"{archive}{os.sep}pkg/mod.pyc"
    assert pyspark_zip.precompile(archive) == 0  # again: nothing to add, the zip untouched


def test_bytecode_that_no_longer_matches_its_source_is_ignored(tmp_path: Path) -> None:
    """A zip rebuilt with new sources but the old .pyc beside them (an upgrade that copied
    entries over): the importer checks each hash and compiles the new source instead."""
    archive = make_zip(tmp_path / "lib.zip", {"m.py": "answer = 'old'\n"})
    pyspark_zip.precompile(archive)
    with zipfile.ZipFile(archive) as zf:
        stale = zf.read("m.pyc")
    make_zip(archive, {"m.py": "answer = 'new'\n", "m.pyc": stale})

    seen = probe([archive], ["m"])

    assert seen["answers"] == {"m": "new"}
    assert seen["compiled"] == [f"{archive}{os.sep}m.py"]


def test_a_failed_rewrite_leaves_the_zip_whole(tmp_path: Path, monkeypatch) -> None:
    archive = make_zip(tmp_path / "lib.zip", {"m.py": "answer = 1\n"})
    original = archive.read_bytes()

    def refuse(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(pyspark_zip.os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        pyspark_zip.precompile(archive)

    assert archive.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lib.zip"]  # no staging copy left


def test_the_command_says_when_there_is_nothing_to_precompile(tmp_path: Path, capsys) -> None:
    assert pyspark_zip.main([str(tmp_path)]) == 1
    assert "no python/lib/*.zip" in capsys.readouterr().err


def test_the_installed_spark_imports_its_streaming_source_runner_without_compiling() -> None:
    """What every new query on a Python data source starts: `make install` precompiled it."""
    zips = pyspark_zip.spark_python_zips(pyspark_zip.spark_home())
    assert [z.name for z in zips][-1] == "pyspark.zip", zips

    seen = probe(zips, ["pyspark.sql.streaming.python_streaming_source_runner"])

    assert seen["compiled"] == [], (
        f"{len(seen['compiled'])} modules compiled from {zips}: run "
        "`.venv/bin/python -m tidegate_runtime.packaging.pyspark_zip` (a fresh `make install` does)"
    )
    assert ".zip" in seen["files"]["pyspark.sql.streaming.python_streaming_source_runner"]
