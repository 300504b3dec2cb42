"""The client the worker and the API read and edit checkpoints in object storage with: where
``TIDEGATE_CHECKPOINT_ROOT`` is an ``s3a://`` URL, an s3fs file system built from
``TIDEGATE_CHECKPOINT_STORAGE_OPTIONS`` (or the standard AWS environment) is registered for
``s3a`` with ``tidegate_runtime.checkpoints.checkpoint.register_store``, so every checkpoint
function (``app/core/paths.py`` ``open_checkpoint``/``read_checkpoint``) opens an
``ObjectDir`` there.
The driver reaches the same checkpoints through its own Hadoop S3A (``hadoop_files.py``).
The options hold credentials: they are never logged, nor put in an error."""

from __future__ import annotations

import logging
from typing import Any

from app.core.config import Settings
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.checkpoints.object_dir import ObjectDir, split_url

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
