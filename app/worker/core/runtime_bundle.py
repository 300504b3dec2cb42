"""The runtime library as one zip that tidegate adds to every submission.

A managed pipeline imports ``tidegate_runtime`` (its control loop, the event-log data source,
startpoints and drains). Rather than ask every cluster to have tidegate installed, or a
PYTHONPATH pointing at a checkout, the worker ships the runtime itself: the package's files,
zipped once per content into ``RUNTIME_BUNDLE_DIR`` and put first in the submission's
py-files. Spark puts py-files on the driver's and the executors' ``sys.path`` ahead of
site-packages, so the version that runs is always the worker's own, whatever the cluster has.

The zip also carries kafka-python (pure Python, no dependencies), which the runtime's Kafka
resolver needs (tidegate_runtime/sources/kafka_client.py): a job reading Kafka resolves its
startpoints without the cluster installing anything. Py-files come ahead of site-packages, so
a driver that imports ``kafka`` itself gets this copy too.

The name holds the version and a hash of the content: a new tidegate never overwrites a
bundle a running driver may still read, and building twice (two workers) writes the same
bytes. The folder must be readable by the drivers: for a cluster on other hosts put it on the
same shared storage as the checkpoints (docs/deploy.md).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import os
import tempfile
import threading
import zipfile
from pathlib import Path

import kafka

import tidegate_runtime

PACKAGE = "tidegate_runtime"
# A fixed timestamp: the same sources make the same bytes, so the same name.
_EPOCH = (1980, 1, 1, 0, 0, 0)
_lock = threading.Lock()
_built: dict[Path, Path] = {}


def _version() -> str:
    try:
        return importlib.metadata.version("tidegate")
    except importlib.metadata.PackageNotFoundError:
        return "0"


def _sources() -> list[tuple[str, bytes]]:
    entries = []
    # kafka-python reads its protocol schemas (JSON) as package resources: ship those too.
    for package, kept in ((tidegate_runtime, (".py", ".typed")), (kafka, (".py", ".json"))):
        root = Path(str(package.__file__)).parent
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in kept)
        entries += [
            (f"{root.name}/{p.relative_to(root).as_posix()}", p.read_bytes()) for p in files
        ]
    return entries


def build_zip() -> bytes:
    """The runtime package as a deterministic zip (sorted entries, fixed timestamps)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in _sources():
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buffer.getvalue()


def runtime_bundle(directory: Path) -> Path:
    """The bundle's path under ``directory``, written there first if it is not yet.

    Written to a temporary file and renamed: a driver never reads half a zip, and two
    workers building at once both end with the same complete file."""
    directory = directory.absolute()
    with _lock:
        if directory in _built and _built[directory].exists():
            return _built[directory]
        data = build_zip()
        digest = hashlib.sha256(data).hexdigest()[:12]
        path = directory / f"{PACKAGE}-{_version()}-{digest}.zip"
        if not path.exists() or path.read_bytes() != data:
            _make_readable_dir(directory)
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                os.chmod(tmp, 0o644)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        _built[directory] = path
        return path


def _make_readable_dir(directory: Path) -> None:
    """The bundle's folder, made 0755 if missing: the one folder tidegate makes for others to
    read, as drivers of another OS user import the runtime from it. It holds public code only,
    and nothing but tidegate may write it. One that exists keeps its mode (issue 51 L1)."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    try:
        directory.mkdir(mode=0o755)
    except FileExistsError:
        return
    directory.chmod(0o755)  # the umask may have taken bits
