"""Bytecode inside Spark's ``python/lib/*.zip``, so Python processes Spark starts skip compiling.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` (and py4j's zip) first on the ``PYTHONPATH``
of every Python process it starts: the driver, each executor's worker daemon, and **one new
process per streaming query whose source is a Python data source** (Spark's
``PythonStreamingSourceRunner``). Those zips hold sources only, and Python's zip importer
never writes bytecode, so each such process compiles pyspark afresh: 0.43 s here to import
the source runner from the zip against 0.12 s from bytecode, and the runner of a new query
starts inside an update's pause.

``precompile`` adds a ``name.pyc`` beside each ``name.py`` of a zip, where the zip importer
looks first. Each ``.pyc`` is hash-checked: the importer compares it with its source on import
and compiles the source as before when they differ, or when another Python version reads the
zip (a different magic number). Run once per Spark installation, at install time; nothing
else changes:

    python -m tidegate_runtime.packaging.pyspark_zip [SPARK_HOME]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import py_compile
import shutil
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path


def spark_python_zips(spark_home: Path) -> list[Path]:
    """The zips Spark puts on its Python processes' path (``PythonUtils.sparkPythonPath``)."""
    return sorted((spark_home / "python" / "lib").glob("*.zip"))


def _pyc(archive: Path, name: str, source: bytes, scratch: Path) -> bytes:
    src, pyc = scratch / "module.py", scratch / "module.pyc"
    src.write_bytes(source)
    with warnings.catch_warnings():  # the importer would warn, once, where it compiles
        warnings.simplefilter("ignore")
        py_compile.compile(
            str(src),
            cfile=str(pyc),
            dfile=f"{archive}{os.sep}{name}",  # the name the zip importer gives: tracebacks
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
        )
    return pyc.read_bytes()


def precompile(archive: Path) -> int:
    """Add a checked ``.pyc`` for each ``.py`` of ``archive`` that has none; return how many.

    The zip is rewritten as a copy that keeps every existing entry where it was, then renamed
    over the original: a process that has the zip's table of contents cached reads the same
    offsets, and a crash leaves the original whole. Running it again adds nothing."""
    with zipfile.ZipFile(archive) as zf, tempfile.TemporaryDirectory() as scratch:
        names = set(zf.namelist())
        missing = [
            n
            for n in sorted(names)
            if n.endswith(".py") and n + "c" not in names and "/tests/" not in n  # never run
        ]
        compiled: list[tuple[str, bytes]] = []
        for name in missing:
            try:
                compiled.append((name + "c", _pyc(archive, name, zf.read(name), Path(scratch))))
            except py_compile.PyCompileError:
                continue  # left to the importer, which fails on it as it did before
    if not compiled:
        return 0
    staging = archive.with_name(f".{archive.name}.{os.getpid()}.tmp")
    try:
        shutil.copyfile(archive, staging)
        with zipfile.ZipFile(staging, "a", compression=zipfile.ZIP_DEFLATED) as zf:
            for name, data in compiled:
                zf.writestr(name, data)
        shutil.copymode(archive, staging)
        os.replace(staging, archive)
    finally:
        staging.unlink(missing_ok=True)
    return len(compiled)


def spark_home() -> Path:
    """The Spark that tidegate runs: ``$SPARK_HOME`` when it holds ``bin/spark-class``, else the
    distribution inside the installed pyspark package (the one rule for every caller)."""
    env = os.environ.get("SPARK_HOME")
    if env and (Path(env) / "bin" / "spark-class").exists():
        return Path(env)
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise RuntimeError("pyspark is not installed and SPARK_HOME names no Spark distribution")
    return Path(spec.origin).parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tidegate_runtime.packaging.pyspark_zip",
        description="Add bytecode to Spark's python/lib/*.zip (see the module's docstring).",
    )
    parser.add_argument("spark_home", nargs="?", type=Path, help="default: SPARK_HOME or pyspark's")
    args = parser.parse_args(argv)
    try:
        home = args.spark_home or spark_home()
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    zips = spark_python_zips(home)
    if not zips:
        print(f"no python/lib/*.zip under {home}: nothing to do", file=sys.stderr)
        return 1
    for archive in zips:
        print(f"{archive}: {precompile(archive)} modules compiled")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
