"""The snapshot store's filesystem when its root is a URL such as ``s3://bucket/prefix``.

Options come from the settings (``TIDEGATE_SNAPSHOT_STORAGE_OPTIONS``, a JSON object passed to
the fsspec filesystem) or the library's standard environment (``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``…), never from a request. Per protocol, defaults bound how long a
request may hang and switch off fsspec's listing cache (blobs are deleted by gc in another
process; a cached listing could claim a deleted blob still exists).

Every call goes through ``GuardedFileSystem``: the client library's errors (botocore's,
aiohttp's, timeouts) come out as ``StoreError`` naming the store, the operation and the
cause, with credentials redacted, since the message ends up on the snapshot and the
operation. ``FileNotFoundError`` of a read still means "no such object" to the store.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

import fsspec

from app.snapshots.errors import StoreError

STORE_HINT = (
    "check that the worker reaches the store and that TIDEGATE_SNAPSHOT_ROOT and "
    "TIDEGATE_SNAPSHOT_STORAGE_OPTIONS (or the AWS_* environment) are right, then try again"
)
# Connect and read timeouts in seconds, and botocore's own retries; s3fs retries a timed-out
# request again on top (5 times by default; S3FS_RETRIES here): a store that hangs fails the
# export in minutes, not in half an hour.
DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "s3": {
        "use_listings_cache": False,
        "config_kwargs": {
            "connect_timeout": 10,
            "read_timeout": 60,
            "retries": {"max_attempts": 3, "mode": "standard"},
        },
    },
}
DEFAULT_OPTIONS["s3a"] = DEFAULT_OPTIONS["s3"]
S3FS_RETRIES = 2
LOCAL_PROTOCOLS = frozenset({"file", "local"})
# Option names whose values are credentials (anywhere in the nested options).
SECRET_NAME = re.compile(r"key|secret|token|password|credential|passphrase", re.IGNORECASE)
SECRET_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
USERINFO = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/@\s]+@", re.IGNORECASE)
REASON_LIMIT = 500
# What each call does, for the error message.
ACTIONS = {
    "put_file": "uploading",
    "pipe_file": "writing",
    "open": "reading",
    "exists": "checking",
    "info": "checking",
    "find": "listing",
    "rm_file": "deleting",
}


def is_local(url: str) -> bool:
    protocol, _ = fsspec.core.split_protocol(url)
    return protocol is None or protocol in LOCAL_PROTOCOLS


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _secrets(options: Mapping[str, Any]) -> set[str]:
    found = {os.environ[name] for name in SECRET_ENV if os.environ.get(name)}

    def walk(value: Any, secret: bool) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, secret or bool(SECRET_NAME.search(str(k))))
        elif isinstance(value, list | tuple):
            for v in value:
                walk(v, secret)
        elif secret and isinstance(value, str) and value:
            found.add(value)

    walk(options, False)
    return {s for s in found if len(s) >= 4}


def redact(text: str, secrets: Iterable[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return USERINFO.sub(r"\1***@", text)


def open_remote(
    url: str, options: Mapping[str, Any] | None
) -> tuple[fsspec.AbstractFileSystem, str]:
    """The guarded filesystem of a remote root and the root path inside it."""
    protocol, _ = fsspec.core.split_protocol(url)
    kwargs = _merge(DEFAULT_OPTIONS.get(str(protocol), {}), options or {})
    secrets = _secrets(kwargs)
    shown = redact(url, secrets)
    try:
        # Our own instance: fsspec's cache would share one across settings (and tests).
        fs, root = fsspec.core.url_to_fs(url, skip_instance_cache=True, **kwargs)
    except Exception as exc:  # ImportError (no s3fs), TypeError (unknown option), …
        raise StoreError(
            f"snapshot store {shown}: cannot open it: {_reason(exc, secrets)}; {STORE_HINT}"
        ) from None
    if protocol in ("s3", "s3a"):
        fs.retries = S3FS_RETRIES  # an attribute, not a constructor option, in s3fs
    guarded = GuardedFileSystem(fs, shown, secrets)
    return cast(fsspec.AbstractFileSystem, guarded), str(root).rstrip("/")


def _reason(exc: BaseException, secrets: Iterable[str]) -> str:
    text = str(exc).strip() or "no detail"
    return redact(f"{type(exc).__name__}: {text}", secrets)[:REASON_LIMIT]


class GuardedFileSystem:
    """Delegates to an fsspec filesystem and turns its errors into ``StoreError``."""

    def __init__(self, fs: fsspec.AbstractFileSystem, shown_url: str, secrets: set[str]) -> None:
        self._fs = fs
        self._shown = shown_url
        self._secrets = secrets

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._fs, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                result = attr(*args, **kwargs)
            except FileNotFoundError as exc:
                # A write cannot miss its object: the bucket is missing (unless put_file's
                # local source is gone, which the export handles by listing again).
                if name in {"put_file", "pipe_file"} and not _local_source_missing(name, args):
                    raise self.error(name, args, exc) from None
                raise  # a read: no such object
            except Exception as exc:
                raise self.error(name, args, exc) from None
            if name == "open":
                return _GuardedFile(result, lambda exc: self.error("open", args, exc))
            return result

        return call

    def error(self, name: str, args: tuple[Any, ...], exc: BaseException) -> StoreError:
        target = args[1] if name == "put_file" and len(args) > 1 else (args[0] if args else "")
        where = f" {redact(str(target), self._secrets)}" if target else ""
        action = ACTIONS.get(name, name)
        return StoreError(
            f"snapshot store {self._shown}: {action}{where} failed: "
            f"{_reason(exc, self._secrets)}; {STORE_HINT}"
        )


def _local_source_missing(name: str, args: tuple[Any, ...]) -> bool:
    return name == "put_file" and bool(args) and not os.path.exists(str(args[0]))


_R = TypeVar("_R")


class _GuardedFile:
    """A remote file whose reads fail as ``StoreError`` (a missing object stays missing)."""

    def __init__(self, f: Any, error: Callable[[BaseException], StoreError]) -> None:
        self._f = f
        self._error = error

    def _guarded(self, call: Callable[[], _R]) -> _R:
        try:
            return call()
        except FileNotFoundError:
            raise
        except Exception as exc:
            raise self._error(exc) from None

    def read(self, size: int = -1) -> bytes:
        return self._guarded(lambda: cast(bytes, self._f.read(size)))

    def readinto(self, buffer: bytearray) -> int:
        return self._guarded(lambda: cast(int, self._f.readinto(buffer)))

    def close(self) -> None:
        self._guarded(self._f.close)

    def __enter__(self) -> _GuardedFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
