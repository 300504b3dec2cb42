"""Pinned JVM jars (jvm/deps.toml): fetched once at install time, only looked up at run time.

``make install`` runs ``python -m app.devtools.jvm_deps fetch``, which downloads every pinned jar
from Maven Central into the cache (``~/.cache/tidegate/jars``, or ``$TIDEGATE_JAR_CACHE``) and
checks its sha256. Code that needs the jars calls :func:`jars`, which never downloads: a run
must not depend on the network, nor on whatever Maven Central serves that day.

    python -m app.devtools.jvm_deps fetch [--group NAME]
    python -m app.devtools.jvm_deps path GROUP [--sep ,]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

import httpx

DEPS_FILE = Path(__file__).resolve().parents[2] / "jvm" / "deps.toml"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
# A mirror of Maven Central (a company's Nexus or Artifactory): the pinned hashes still decide.
REPOSITORY_ENV = "TIDEGATE_MAVEN_REPOSITORY"
INSTALL_HINT = "make install (or: python -m app.devtools.jvm_deps fetch)"


class MissingJarsError(RuntimeError):
    """A group's jars are not in the cache: they are fetched at install time, never at run time."""


@dataclass(frozen=True)
class Jar:
    group_id: str
    artifact_id: str
    version: str
    sha256: str

    @classmethod
    def parse(cls, coord: str, sha256: str) -> Jar:
        group_id, artifact_id, version = coord.split(":")
        return cls(group_id, artifact_id, version, sha256.lower())

    @property
    def coord(self) -> str:
        return f"{self.group_id}:{self.artifact_id}:{self.version}"

    @property
    def relpath(self) -> str:
        """Maven's repository layout, so two versions of one artifact never collide in the cache."""
        group = self.group_id.replace(".", "/")
        name = f"{self.artifact_id}-{self.version}.jar"
        return f"{group}/{self.artifact_id}/{self.version}/{name}"


def load_groups(deps_file: Path = DEPS_FILE) -> dict[str, list[Jar]]:
    """Every group in deps.toml: ``{name: [Jar, ...]}``, in file order."""
    with deps_file.open("rb") as f:
        data = tomllib.load(f)
    return {
        name: [Jar.parse(j["coord"], j["sha256"]) for j in group["jars"]]
        for name, group in data["groups"].items()
    }


def cache_dir() -> Path:
    """Where fetched jars live; outside the repo so every worktree and venv shares one copy."""
    env = os.environ.get("TIDEGATE_JAR_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "tidegate" / "jars"


def repository() -> str:
    return os.environ.get(REPOSITORY_ENV, MAVEN_CENTRAL).rstrip("/")


def _group(name: str, deps_file: Path) -> list[Jar]:
    groups = load_groups(deps_file)
    if name not in groups:
        raise ValueError(f"no jar group {name!r} in {deps_file} (groups: {', '.join(groups)})")
    return groups[name]


def jars(group: str, *, cache: Path | None = None, deps_file: Path = DEPS_FILE) -> list[Path]:
    """The cached jars of ``group``; raises :class:`MissingJarsError` rather than downloading.

    Presence is enough: :func:`fetch` only moves a file into place after its sha256 matched.
    """
    root = cache or cache_dir()
    paths = [root / jar.relpath for jar in _group(group, deps_file)]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise MissingJarsError(
            f"{len(missing)} of {len(paths)} jars of group {group!r} are not in {root} "
            f"(first: {missing[0].name}); run `{INSTALL_HINT}`"
        )
    return paths


def classpath(group: str, *, cache: Path | None = None, sep: str = os.pathsep) -> str:
    """``jars(group)`` joined for ``java -cp`` (or with ``sep=","`` for ``spark.jars``)."""
    return sep.join(str(p) for p in jars(group, cache=cache))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _download(client: httpx.Client, jar: Jar, dest: Path) -> None:
    """Stream to a temp file beside ``dest``, check the hash, then rename: never a partial jar."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        h = hashlib.sha256()
        with (
            os.fdopen(fd, "wb") as out,
            client.stream("GET", f"{repository()}/{jar.relpath}") as r,
        ):
            r.raise_for_status()
            for chunk in r.iter_bytes(1 << 16):
                h.update(chunk)
                out.write(chunk)
        if h.hexdigest() != jar.sha256:
            raise ValueError(f"{jar.coord}: sha256 {h.hexdigest()} != pinned {jar.sha256}")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def fetch(
    groups: list[str] | None = None, *, cache: Path | None = None, deps_file: Path = DEPS_FILE
) -> list[Path]:
    """Download what is missing or corrupt (all groups by default); returns the fetched paths."""
    root = cache or cache_dir()
    defined = load_groups(deps_file)
    names = groups or list(defined)
    unique = {jar.relpath: jar for name in names for jar in _group(name, deps_file)}
    todo = [
        jar
        for jar in unique.values()
        if not (root / jar.relpath).is_file() or _sha256(root / jar.relpath) != jar.sha256
    ]
    fetched = []
    with httpx.Client(follow_redirects=True, timeout=httpx.Timeout(30.0, read=120.0)) as client:
        for jar in todo:
            for attempt in range(3):
                try:
                    _download(client, jar, root / jar.relpath)
                    break
                except httpx.TransportError:
                    if attempt == 2:
                        raise
            fetched.append(root / jar.relpath)
    return fetched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.devtools.jvm_deps", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_fetch = sub.add_parser("fetch", help="download pinned jars into the cache (install time)")
    p_fetch.add_argument("--group", action="append", help="only this group (repeatable)")
    p_path = sub.add_parser("path", help="print a group's cached jars as a classpath")
    p_path.add_argument("group")
    p_path.add_argument("--sep", default=os.pathsep, help="separator (',' for spark.jars)")
    args = parser.parse_args(argv)

    try:
        if args.cmd == "fetch":
            fetched = fetch(args.group)
            print(f"{len(fetched)} jars fetched into {cache_dir()}", file=sys.stderr)
        else:
            print(classpath(args.group, sep=args.sep))
    except (MissingJarsError, ValueError, httpx.HTTPError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
