"""Settings, read from the environment with the ``TIDEGATE_`` prefix (or a ``.env`` file)."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.core.durations import parse_duration
from app.core.paths import CheckpointRoot
from app.core.token_strength import check_token_strength
from tidegate_runtime.checkpoints.object_dir import UrlPath


class Settings(BaseSettings):
    # hide_input_in_errors: a refused value (a database URL, storage options) holds secrets.
    model_config = SettingsConfigDict(
        env_prefix="TIDEGATE_", env_file=".env", extra="ignore", hide_input_in_errors=True
    )

    database_url: str | None = Field(
        default=None,
        description="External PostgreSQL (postgresql+psycopg://…). Unset: an embedded PostgreSQL "
        "is started under DATA_DIR.",
    )
    data_dir: Path = Field(
        default=Path(".tidegate"), description="Embedded database and local data."
    )
    host: str = "127.0.0.1"
    port: int = 8000
    runner_port: int = Field(
        default=8998,
        description="`tidegate run`: where its embedded Livy-compatible runner listens.",
    )
    admin_token: SecretStr | None = Field(
        default=None, description="Bootstrap admin bearer token, accepted when set."
    )
    runner_token: SecretStr | None = Field(
        default=None,
        description="`tidegate runner`: the bearer token its clients must send; `tidegate run` "
        "generates one in DATA_DIR/runner-token and stores it as cluster 'local's credentials.",
    )
    app_roots: str | None = Field(
        default=None,
        description="Comma-separated directories (or URL prefixes such as s3a://bucket/apps) "
        "whose files operate tokens may put in a version's app.file/py_files. Unset: only "
        "admin tokens may create versions.",
    )
    checkpoint_root: Path | str | None = Field(
        default=None,
        description="Where run checkpoints live: a folder (default DATA_DIR/checkpoints) or an "
        "object store URL, s3a://bucket/prefix (the drivers then need the s3a settings in their "
        "Spark conf, docs/deploy.md).",
    )
    checkpoint_storage_options: SecretStr | None = Field(
        default=None,
        description="JSON object of s3fs options the worker and the API read and edit an "
        "s3a:// CHECKPOINT_ROOT with (endpoint_url, key, secret, client_kwargs, "
        "config_kwargs…); unset: the standard AWS environment.",
    )
    runtime_bundle_dir: Path | None = Field(
        default=None,
        description="Where the worker writes the runtime zip it adds to every submission; "
        "drivers read it there, so on a multi-host cluster it lives on shared storage. "
        "Default DATA_DIR/runtime.",
    )
    snapshot_root: str | None = Field(
        default=None, description="Snapshot store (path or fsspec URL); default DATA_DIR/snapshots."
    )
    snapshot_storage_options: SecretStr | None = Field(
        default=None,
        description="JSON object of fsspec options for a remote SNAPSHOT_ROOT (s3fs: endpoint_url, "
        "key, secret, client_kwargs, config_kwargs…); unset: the standard AWS environment.",
    )
    snapshot_restore_links: bool = Field(
        default=False,
        description="Restore snapshots from a local SNAPSHOT_ROOT by hard-linking each file to "
        "its blob (no copy: a restore takes as long for 1 GB as for 1 MB) instead of copying it "
        "with its hash checked. A linked file is the blob: turn this on only where the drivers "
        "run as another OS user than the worker (blobs are read-only to them), or a driver "
        "could change a blob other snapshots share. Object stores and other devices always copy.",
    )
    snapshot_export_links: bool = Field(
        default=False,
        description="Export to a local SNAPSHOT_ROOT by hard-linking each new checkpoint file "
        "into the store (the very file hashed) instead of copying it: a first export costs "
        "its hash alone, and the store holds no second copy of the bytes. A stored file is "
        "then the checkpoint's file: turn this on only where nothing writes a checkpoint file "
        "in place (Spark and tidegate never do; driver code could). Only files of the worker's "
        "own OS user that no one else may write are linked; files of another user, on another "
        "device or on object stores are copied.",
    )
    public_url: str | None = Field(
        default=None,
        description="URL Spark drivers use to reach this API; default http://HOST:PORT.",
    )
    standby_timeout_seconds: int = Field(
        default=3600,
        ge=60,
        le=7 * 86_400,
        description="How long a pre-warmed driver (a standby) waits for go before it exits by "
        "itself: the backstop for an update that never comes back to it.",
    )
    spare_timeout_seconds: int = Field(
        default=7 * 86_400,
        ge=60,
        le=365 * 86_400,
        description="How long a run's spare (a hot spare waits as long as its run runs) waits "
        "for go before it exits by itself, if the control plane cannot tell it to stop; the "
        "reconciler then starts another.",
    )
    fenced_exit_seconds: int = Field(
        default=60,
        ge=1,
        le=86_400,
        description="How long what is left of a fenced driver (its queries and Spark session "
        "stopped, its run ended) may take to exit before the worker kills it: the job's code "
        "can keep the process alive (a non-daemon thread), holding the cluster's cores.",
    )
    log_level: str = "INFO"
    log_json: bool = True
    log_file: Path | None = Field(
        default=None, description="Also write every log line to this file."
    )
    log_terminal_level: str | None = Field(
        default=None,
        description="Only lines at this level and above go to stderr (with log_file, the "
        "rest goes to the file only). 'tidegate run' sets WARNING.",
    )
    db_pool_size: int = Field(
        default=10,
        ge=1,
        le=500,
        description="Pooled connections per API process (as many again may overflow); sized "
        "with PostgreSQL's max_connections in docs/deploy.md.",
    )
    api_threads: int = Field(
        default=40,
        ge=4,
        le=1000,
        description="Threads per API process for the synchronous endpoints (anyio's pool). "
        "Requests at work on the database are bounded by the pool anyway (db_pool_size); "
        "the rest of the threads serve requests that wait for a connection slot without one.",
    )
    max_waiting_drivers: int = Field(
        default=2000,
        ge=1,
        le=100_000,
        description="Long-polls (standbys and spares waiting for go) one API process holds at "
        "once; more answer 503 with Retry-After. A waiting driver costs no thread and no "
        "connection, only a socket and a little memory.",
    )
    db_statement_timeout_ms: int = 15_000
    max_page_size: int = 500
    eventlog_roots: str | None = Field(
        default=None,
        description="Folders (comma-separated) under which the API may read event logs, to "
        "check and preview startpoints; default DATA_DIR. Drivers read their sources anyway.",
    )
    kafka_preview_brokers: str | None = Field(
        default=None,
        description="Kafka brokers (host:port, comma-separated) the API may ask to preview a "
        "Kafka source's OLDEST, UPCOMING and TIMESTAMP startpoints: a source whose every "
        "bootstrap server is listed is previewed against its brokers (a consumer with no "
        "group, which commits nothing). Default none: the API never connects to an address a "
        "version names, the preview says so, and the driver resolves them when it starts.",
    )
    sink_roots: str | None = Field(
        default=None,
        description="Folders (comma-separated) under which the API may list a declared file "
        "sink's _spark_metadata log, to refuse an update whose sink log does not fit the "
        "state it resumes; default: the event-log roots. A sink elsewhere is never listed "
        "(by the API or by the worker's check of a new run), so it is not checked.",
    )
    audit_retention: str = Field(
        default="90d",
        description="How long audit events are kept (e.g. 90d, 365d); the worker deletes older "
        "ones in small batches.",
    )

    @field_validator("audit_retention")
    @classmethod
    def _retention_is_a_duration(cls, value: str) -> str:
        if parse_duration(value) <= timedelta(0):
            raise ValueError("must be more than zero, e.g. 90d")
        return value

    @property
    def resolved_eventlog_roots(self) -> list[Path]:
        if not self.eventlog_roots:
            return [self.data_dir.absolute()]
        return [Path(p.strip()).absolute() for p in self.eventlog_roots.split(",") if p.strip()]

    @property
    def resolved_kafka_preview_brokers(self) -> frozenset[str]:
        return frozenset(
            b.strip().lower() for b in (self.kafka_preview_brokers or "").split(",") if b.strip()
        )

    @property
    def resolved_sink_roots(self) -> list[Path]:
        if not self.sink_roots:
            return self.resolved_eventlog_roots
        return [Path(p.strip()).absolute() for p in self.sink_roots.split(",") if p.strip()]

    @property
    def audit_retention_delta(self) -> timedelta:
        return parse_duration(self.audit_retention)

    @field_validator("snapshot_root")
    @classmethod
    def _no_credentials_in_root(cls, root: str | None) -> str | None:
        if root is not None and re.match(r"^[a-z][a-z0-9+.-]*://[^/]*@", root, re.IGNORECASE):
            raise ValueError(
                "holds credentials (user@ or key:secret@): put them in "
                "TIDEGATE_SNAPSHOT_STORAGE_OPTIONS or the AWS_* environment instead"
            )
        return root

    @field_validator("checkpoint_root", mode="before")
    @classmethod
    def _root_folder_or_url(cls, root: object) -> object:
        """A folder stays a Path; ``scheme://bucket/prefix`` (not ``file:``) stays a URL."""
        if root is None or isinstance(root, Path):
            return root
        text = str(root).strip()
        if not text:
            return None
        if "://" not in text or text.lower().startswith("file:"):
            return Path(text[len("file://") :] if text.lower().startswith("file://") else text)
        if re.match(r"^[a-z][a-z0-9+.-]*://[^/]*@", text, re.IGNORECASE):
            raise ValueError(
                "holds credentials (user@ or key:secret@): put them in "
                "TIDEGATE_CHECKPOINT_STORAGE_OPTIONS or the AWS_* environment instead"
            )
        scheme, _, rest = text.partition("://")
        if scheme.lower() != "s3a":
            raise ValueError(
                f"{scheme}:// is not a checkpoint store tidegate reads yet; use a folder or "
                "s3a://bucket/prefix"
            )
        if not rest.strip("/"):
            raise ValueError("names no bucket: use s3a://bucket/prefix")
        return f"s3a://{rest.strip('/')}"

    @field_validator("checkpoint_storage_options", "snapshot_storage_options")
    @classmethod
    def _options_are_a_json_object(cls, options: SecretStr | None) -> SecretStr | None:
        if options is not None:
            try:
                parsed = json.loads(options.get_secret_value())
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict):
                # Never the value itself: it holds credentials.
                raise ValueError('must be a JSON object, e.g. {"endpoint_url": "https://…"}')
        return options

    @property
    def snapshot_storage_options_dict(self) -> dict[str, Any]:
        if self.snapshot_storage_options is None:
            return {}
        parsed: dict[str, Any] = json.loads(self.snapshot_storage_options.get_secret_value())
        return parsed

    @field_validator("admin_token")
    @classmethod
    def _strong_admin_token(cls, token: SecretStr | None) -> SecretStr | None:
        if token is not None:
            check_token_strength(token.get_secret_value())
        return token

    @field_validator("runner_token")
    @classmethod
    def _strong_runner_token(cls, token: SecretStr | None) -> SecretStr | None:
        if token is not None:
            check_token_strength(token.get_secret_value())
        return token

    @property
    def checkpoint_storage_options_dict(self) -> dict[str, Any]:
        if self.checkpoint_storage_options is None:
            return {}
        parsed: dict[str, Any] = json.loads(self.checkpoint_storage_options.get_secret_value())
        return parsed

    @property
    def resolved_checkpoint_root(self) -> CheckpointRoot:
        """The checkpoint root: an absolute folder, or an object store URL (``UrlPath``)."""
        if isinstance(self.checkpoint_root, str):
            return UrlPath(self.checkpoint_root)
        return (self.checkpoint_root or self.data_dir / "checkpoints").absolute()

    @property
    def scratch_root(self) -> Path:
        """The checkpoint root where it is a folder; where it is an object store, the local
        folder dry runs' and spares' scratch copies go to instead (DATA_DIR/dry-runs: their
        trial batches run on this machine's disk)."""
        root = self.resolved_checkpoint_root
        return root if isinstance(root, Path) else (self.data_dir / "dry-runs").absolute()

    @property
    def resolved_runtime_bundle_dir(self) -> Path:
        return (self.runtime_bundle_dir or self.data_dir / "runtime").absolute()

    @property
    def resolved_snapshot_root(self) -> str:
        return self.snapshot_root or str((self.data_dir / "snapshots").absolute())

    @property
    def api_url(self) -> str:
        return self.public_url or f"http://{self.host}:{self.port}"


@lru_cache
def get_settings() -> Settings:
    """The settings; invalid ones stop the process with the reason (no traceback)."""
    try:
        return Settings()
    except ValidationError as exc:
        reasons = "; ".join(
            f"TIDEGATE_{'.'.join(str(p) for p in e['loc']).upper()}: "
            + e["msg"].removeprefix("Value error, ")
            for e in exc.errors()
        )
        raise SystemExit(f"tidegate: invalid settings: {reasons}") from None
