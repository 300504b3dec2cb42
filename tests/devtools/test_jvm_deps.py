"""Pinned jars: fetched from a Maven repository (a real HTTP server on loopback standing in for
Maven Central, as a mirror would), checked by sha256, kept whole or not at all, and only looked
up at run time."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from app.devtools import jvm_deps

JAR = b"PK\x03\x04 a jar's bytes"
COORD = "org.example:thing:1.2.3"
REL = "org/example/thing/1.2.3/thing-1.2.3.jar"


@pytest.fixture
def repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    served = tmp_path / "repo"
    (served / REL).parent.mkdir(parents=True)
    (served / REL).write_bytes(JAR)
    handler = partial(SimpleHTTPRequestHandler, directory=str(served))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv(jvm_deps.REPOSITORY_ENV, f"http://127.0.0.1:{server.server_port}/")
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()


def _deps(tmp_path: Path, sha256: str) -> Path:
    deps = tmp_path / "deps.toml"
    deps.write_text(f'[groups.g]\njars = [{{ coord = "{COORD}", sha256 = "{sha256}" }}]\n')
    return deps


def test_fetch_checks_the_hash_keeps_a_good_jar_and_mends_a_bad_one(
    tmp_path: Path, repository: Path
) -> None:
    cache, deps = tmp_path / "cache", _deps(tmp_path, hashlib.sha256(JAR).hexdigest())
    with pytest.raises(jvm_deps.MissingJarsError, match="make install"):
        jvm_deps.jars("g", cache=cache, deps_file=deps)  # never a download at run time
    assert jvm_deps.fetch(cache=cache, deps_file=deps) == [cache / REL]
    assert jvm_deps.jars("g", cache=cache, deps_file=deps) == [cache / REL]
    assert (cache / REL).read_bytes() == JAR
    assert jvm_deps.fetch(cache=cache, deps_file=deps) == []  # cached and whole: no request
    (cache / REL).write_bytes(b"truncated")
    assert jvm_deps.fetch(cache=cache, deps_file=deps) == [cache / REL]
    assert (cache / REL).read_bytes() == JAR


def test_a_jar_that_does_not_match_its_pin_is_never_kept(tmp_path: Path, repository: Path) -> None:
    cache, deps = tmp_path / "cache", _deps(tmp_path, "0" * 64)
    with pytest.raises(ValueError, match=r"org\.example:thing:1\.2\.3: sha256 .* != pinned"):
        jvm_deps.fetch(cache=cache, deps_file=deps)
    assert not [p for p in cache.rglob("*") if p.is_file()]  # no partial or wrong file left


def test_the_pins_name_every_group_the_project_uses() -> None:
    groups = jvm_deps.load_groups()
    assert {"spark-kafka", "kafka-broker", "hadoop-aws"} <= set(groups)
    for jars in groups.values():
        assert all(len(j.sha256) == 64 and int(j.sha256, 16) >= 0 for j in jars)
