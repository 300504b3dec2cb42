"""The client the worker and the API read and edit checkpoints in object storage with: where
``TIDEGATE_CHECKPOINT_ROOT`` is an ``s3a://`` URL, an s3fs file system built from
``TIDEGATE_CHECKPOINT_STORAGE_OPTIONS`` (or the standard AWS environment) is registered for ``s3a``
with ``tidegate_runtime.checkpoints.checkpoint.register_store``, so every checkpoint function
(``app/core/paths.py`` ``open_checkpoint``/``read_checkpoint``) opens an ``ObjectDir`` there. The
driver reaches the same checkpoints through its own Hadoop S3A (``hadoop_files.py``). The options
hold credentials: they are never logged, nor put in an error."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from app.core.config import Settings
from app.core.errors import NotInObjectStoreYet
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.checkpoints.object_dir import ObjectDir, UrlPath, split_url

log = logging.getLogger(__name__)

# No listings cache (a checkpoint's folders change under the worker: Spark writes them), and
# timeouts and botocore's retries as the snapshot store's (app/snapshots/store/remote.py): a
# store that hangs fails an operation in minutes, not in half an hour.
CONFIG_DEFAULTS: dict[str, Any] = {
    "connect_timeout": 10,
    "read_timeout": 60,
    "retries": {"max_attempts": 3, "mode": "standard"},
}


class CheckpointStoreError(RuntimeError):
    pass


def filesystem(settings: Settings) -> Any:
    """An s3fs file system for the checkpoint root's bucket, from the storage options."""
    import fsspec

    options: dict[str, Any] = dict(settings.checkpoint_storage_options_dict)
    config = {**CONFIG_DEFAULTS, **(options.pop("config_kwargs", None) or {})}
    options.setdefault("skip_instance_cache", True)
    options.setdefault("use_listings_cache", False)
    try:
        return fsspec.filesystem("s3", config_kwargs=config, **options)
    except Exception as exc:  # the options' values stay out of it: they hold credentials
        raise CheckpointStoreError(
            "TIDEGATE_CHECKPOINT_STORAGE_OPTIONS are not options an s3fs file system takes "
            f"({type(exc).__name__}); see docs/deploy.md, 'Checkpoints in object storage'"
        ) from None


def register(settings: Settings) -> bool:
    """Where the checkpoint root is an object store: its client registered for its scheme
    (True); a folder root registers nothing (False)."""
    root = settings.checkpoint_root
    if not isinstance(root, str):
        return False
    scheme, _ = split_url(root)
    fs = filesystem(settings)
    cp.register_store(scheme, lambda url: ObjectDir(fs, url))
    log.info("checkpoints in object storage: %s (s3fs)", root)
    return True


# What is not done yet on checkpoints in object storage, and what to do instead. Refused up
# front, by the API (422) and by the worker (the operation fails before its first step).
NOT_YET = {
    "snapshot": (
        "snapshots of checkpoints in object storage are not supported yet",
        "to change versions, update by drain (strategy 'drain'): the old run is drained and "
        "the new version starts exactly where it ended; or keep checkpoints in a folder "
        "(a local TIDEGATE_CHECKPOINT_ROOT) to take snapshots",
    ),
    "update": (
        "an update by snapshot of checkpoints in object storage is not supported yet",
        "use strategy 'drain' (the old run drained, the new version started exactly where it "
        "ended) or 'stateless'",
    ),
    "restore": (
        "starting a run from a snapshot or a resume point is not supported yet where "
        "checkpoints are in object storage",
        "submit without one (the run starts on fresh checkpoints; startpoints say where each "
        "source starts), or update a running job by drain",
    ),
    "resume_point": (
        "resume points of checkpoints in object storage are not supported yet",
        "submit without one (startpoints say where each source starts), or update a running "
        "job by drain",
    ),
}


def refusal(settings: Settings, what: str) -> str | None:
    """Why ``what`` (a ``NOT_YET`` key) cannot be done with this checkpoint root, or None."""
    root = settings.resolved_checkpoint_root
    if not isinstance(root, UrlPath):
        return None
    said, instead = NOT_YET[what]
    return f"{said} (TIDEGATE_CHECKPOINT_ROOT is {root}); {instead}."


def refuse(settings: Settings, what: str, field: str | None = None) -> None:
    """422 (``NotInObjectStoreYet``) where ``what`` is not done yet on this checkpoint root."""
    message = refusal(settings, what)
    if message is not None:
        if field is None:
            raise NotInObjectStoreYet(message)
        raise NotInObjectStoreYet(message, errors=[{"field": field, "message": NOT_YET[what][0]}])


def local_root(settings: Settings, what: str, field: str | None = None) -> Path:
    """The checkpoint root where it is a folder; ``NotInObjectStoreYet`` (422) where it is an
    object store and ``what`` (a ``NOT_YET`` key) is not done there yet."""
    refuse(settings, what, field)
    root = settings.resolved_checkpoint_root
    assert isinstance(root, Path)
    return root


def operation_refusal(settings: Settings, kind: str, params: dict[str, Any]) -> str | None:
    """Why the worker cannot carry out an operation of ``kind`` with ``params`` on this
    checkpoint root (the API refused it already; one enqueued before the root moved to an
    object store fails here, before its first step), or None."""
    if kind == "snapshot":
        return refusal(settings, "snapshot")
    if kind == "update" and params.get("strategy", "snapshot") == "snapshot":
        return refusal(settings, "update")
    if kind == "submit" and (params.get("snapshot") or params.get("resume_point")):
        return refusal(settings, "restore")
    return None
