"""The driver's own view of a checkpoint in object storage: the file methods an ``ObjectDir`` needs
(tidegate_runtime/checkpoints/object_dir.py), over the Hadoop ``FileSystem`` Spark itself writes the
checkpoint with (through py4j), so the runtime reads and edits it with exactly the driver's settings
(endpoint, credentials provider, path style) and nothing of its own to configure.

Registered by ``Runtime.from_spark`` for the object-store schemes Hadoop serves; pyspark and
the standard library only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.checkpoints.object_dir import ObjectDir

# Schemes a driver's Hadoop may serve (given its jars): S3 (s3a), Google Cloud Storage (gs),
# Azure (abfs, abfss, wasb), HDFS. Only s3a is tested here (against moto's S3 server).
SCHEMES = ("s3a", "gs", "abfs", "abfss", "wasb", "hdfs")


def _not_found(exc: Exception) -> bool:
    return "java.io.FileNotFoundException" in str(getattr(exc, "java_exception", "")) or (
        "FileNotFoundException" in str(exc)
    )


class HadoopFiles:
    """fsspec-style file methods on keys ``bucket/prefix/...`` of one scheme."""

    def __init__(self, spark: SparkSession, scheme: str) -> None:
        self.scheme = scheme
        self._jvm: Any = spark._jvm  # type: ignore[attr-defined]
        self._conf = spark._jsc.hadoopConfiguration()  # type: ignore[union-attr]

    def _path(self, key: str) -> tuple[Any, Any]:
        path = self._jvm.org.apache.hadoop.fs.Path(f"{self.scheme}://{key}")
        return path.getFileSystem(self._conf), path

    def _call(self, key: str, action: Any) -> Any:
        fs, path = self._path(key)
        try:
            return action(fs, path)
        except Exception as exc:
            if _not_found(exc):
                raise FileNotFoundError(f"{self.scheme}://{key}") from None
            raise

    def ls(self, path: str, detail: bool = False) -> list[Any]:
        statuses = self._call(path, lambda fs, p: fs.listStatus(p))
        return [f"{path.rstrip('/')}/{s.getPath().getName()}" for s in statuses]

    def info(self, path: str) -> dict[str, Any]:
        st = self._call(path, lambda fs, p: fs.getFileStatus(p))
        return {"size": int(st.getLen()), "type": "directory" if st.isDirectory() else "file"}

    def cat_file(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        def read(fs: Any, p: Any) -> bytes:
            stream = fs.open(p)
            try:
                if start:
                    stream.seek(start)
                want = (end - (start or 0)) if end is not None else 2**31 - 1
                return bytes(stream.readNBytes(want))
            finally:
                stream.close()

        return bytes(self._call(path, read))

    def pipe_file(self, path: str, value: bytes) -> None:
        def write(fs: Any, p: Any) -> None:
            out = fs.create(p, True)  # overwrite; on S3A, one PUT at close
            try:
                out.write(bytearray(value))
            finally:
                out.close()

        self._call(path, write)

    def rm_file(self, path: str) -> None:
        if not self._call(path, lambda fs, p: fs.delete(p, False)):
            raise FileNotFoundError(f"{self.scheme}://{path}")

    def mv(self, path1: str, path2: str) -> None:
        fs, source = self._path(path1)
        if not fs.rename(source, self._path(path2)[1]):
            raise OSError(f"could not rename {self.scheme}://{path1} to {path2}")

    def exists(self, path: str) -> bool:
        return bool(self._call(path, lambda fs, p: fs.exists(p)))

    def isdir(self, path: str) -> bool:
        try:
            return bool(self._call(path, lambda fs, p: fs.getFileStatus(p).isDirectory()))
        except FileNotFoundError:
            return False


def register(spark: SparkSession) -> None:
    """Let the runtime's checkpoint code read and edit checkpoints in the object stores this
    driver's Hadoop serves."""

    def opener(files: HadoopFiles) -> Callable[[str], ObjectDir]:
        return lambda url: ObjectDir(files, url)

    for scheme in SCHEMES:
        cp.register_store(scheme, opener(HadoopFiles(spark, scheme)))
