"""One parse, one form: the files an operate token's version may run.

Spark reads an app file or py-file as a URI (``java.net.URI``, percent-decoded; a query, a
fragment and an authority are parsed off) or, failing that, as a local path. A check that reads
the string any other way checks a different file than Spark opens (issue 51, C1). So a path is
parsed here once, strictly, in a grammar on which every reading agrees: no ``%``, ``?``, ``#``,
``\\``, ``,``, spaces or other characters outside ``A-Z a-z 0-9 . _ - + = @ ~ /``; no ``.``,
``..`` or empty segment; an authority only ``localhost`` (``file:``). It is then resolved
(symbolic links followed), checked against the app roots, and its **canonical form is what the
version stores and every backend submits**: the path checked is the path run.

Forms accepted (everything else is refused, naming the rule):
- ``/abs/path.py``, ``file:/abs/path.py``, ``file:///abs/path.py``,
  ``file://localhost/abs/path.py`` → stored as ``/resolved/path.py``;
- ``local:/abs/path.py``, ``local:///abs/path.py`` → ``local:/resolved/path.py`` (a file
  already on every node);
- ``<scheme>://<authority>/path`` under a root of that same scheme and authority, for the
  remote file systems Spark reads app files from (``REMOTE_SCHEMES``) → stored as written.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

# Characters every reader (java.net.URI, Hadoop's Path, a POSIX shell, Python) takes literally.
_SAFE_PATH = re.compile(r"/[A-Za-z0-9._+=@~/-]*")
_LOCAL = re.compile(r"(?:(?P<scheme>file|local):(?://(?P<authority>[^/]*))?)?(?P<path>/.*)", re.S)
_REMOTE = re.compile(
    r"(?P<scheme>[a-z][a-z0-9+.-]*)://(?P<authority>[A-Za-z0-9.-]+(?::[0-9]{1,5})?)(?P<path>/.*)",
    re.S,
)
# File systems Spark and Hadoop read app files from; an app root may name one of these.
REMOTE_SCHEMES = frozenset(
    {"s3a", "s3", "gs", "abfs", "abfss", "wasb", "wasbs", "hdfs", "viewfs", "http", "https"}
)


@dataclass(frozen=True)
class Refused:
    """Why a path is not one an operate token may run: a sentence a person can act on."""

    reason: str


def canonical(path: str, roots: list[str]) -> str | Refused:
    """The canonical form of the one file ``path`` if it lies under one of ``roots``."""
    if path != path.strip() or not path:
        return Refused("it is empty or has spaces around it")
    local = _LOCAL.fullmatch(path)
    if local is not None:
        if local["authority"] not in (None, "", "localhost") or (
            local["scheme"] == "local" and local["authority"] not in (None, "")
        ):
            return Refused(
                f"its authority '{local['authority']}' would be read as a host or a path "
                "segment; write file:///abs/path or the plain /abs/path"
            )
        return _local(local["path"], "local:" if local["scheme"] == "local" else "", roots)
    remote = _REMOTE.fullmatch(path)
    if remote is not None and remote["scheme"] in REMOTE_SCHEMES:
        return _remote(path, remote["scheme"], remote["authority"], remote["path"], roots)
    if remote is not None or ":" in path.split("/", 1)[0]:
        return Refused(
            "its scheme is not one an operate token may use (plain paths, file:, local: and "
            f"{', '.join(sorted(REMOTE_SCHEMES))}: under an app root of the same scheme)"
        )
    return Refused("it is not absolute (Spark drivers run in their own working directory)")


def _plain(path: str) -> Refused | None:
    if not _SAFE_PATH.fullmatch(path):
        return Refused(
            "it holds a character Spark would decode or split on (%, ?, #, \\, a comma, a "
            "space, a non-ASCII letter...); paths use letters, digits and . _ - + = @ ~ / only"
        )
    segments = path.split("/")[1:]
    if any(s in ("", ".", "..") for s in segments):
        return Refused("it has an empty, '.' or '..' segment; write the path as it is")
    return None


def _local(path: str, prefix: str, roots: list[str]) -> str | Refused:
    refused = _plain(path)
    if refused:
        return refused
    resolved = os.path.realpath(path)  # links followed: the file that will run
    if _plain(resolved):
        return Refused("it is a link to a path Spark would not read as written")
    for root in roots:
        if "://" in root:
            continue
        base = os.path.realpath(root)
        if PurePosixPath(resolved).is_relative_to(base) and resolved != base:
            return prefix + resolved
    return Refused("it is not under an app root (links followed)")


def _remote(url: str, scheme: str, authority: str, path: str, roots: list[str]) -> str | Refused:
    refused = _plain(path)
    if refused:
        return refused
    for root in roots:
        match = _REMOTE.fullmatch(root.rstrip("/") + "/")
        if match is None or (match["scheme"], match["authority"]) != (scheme, authority):
            continue
        base = match["path"].rstrip("/")
        if PurePosixPath(path).is_relative_to(base or "/") and path.rstrip("/") != base:
            return url
    return Refused("it is not under an app root of the same scheme and authority")
