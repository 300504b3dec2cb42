"""Settings, read from the environment with the ``TIDEGATE_`` prefix (or a ``.env`` file)."""

from __future__ import annotations

from datetime import timedelta
from functools import lru_cache
from pathlib import Path

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.durations import parse_duration


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TIDEGATE_", env_file=".env", extra="ignore")

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
    checkpoint_root: Path | None = Field(
        default=None, description="Where run checkpoints live; default DATA_DIR/checkpoints."
    )
    snapshot_root: str | None = Field(
        default=None, description="Snapshot store (path or fsspec URL); default DATA_DIR/snapshots."
    )
    public_url: str | None = Field(
        default=None,
        description="URL Spark drivers use to reach this API; default http://HOST:PORT.",
    )
    log_level: str = "INFO"
    log_json: bool = True
    db_pool_size: int = 10
    db_statement_timeout_ms: int = 15_000
    max_page_size: int = 500
    eventlog_roots: str | None = Field(
        default=None,
        description="Folders (comma-separated) under which the API may read event logs, to "
        "check and preview startpoints; default DATA_DIR. Drivers read their sources anyway.",
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
    def audit_retention_delta(self) -> timedelta:
        return parse_duration(self.audit_retention)

    @property
    def resolved_checkpoint_root(self) -> Path:
        return (self.checkpoint_root or self.data_dir / "checkpoints").absolute()

    @property
    def resolved_snapshot_root(self) -> str:
        return self.snapshot_root or str((self.data_dir / "snapshots").absolute())

    @property
    def api_url(self) -> str:
        return self.public_url or f"http://{self.host}:{self.port}"


@lru_cache
def get_settings() -> Settings:
    return Settings()
