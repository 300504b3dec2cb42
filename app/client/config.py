"""Where the client finds its server and token: flags, then environment, then a TOML file.

pydantic-settings does the layering (flags are init values, ``TIDEGATE_*`` the environment,
``~/.config/tidegate/config.toml`` or ``$TIDEGATE_CONFIG`` the file), so the three sources
validate the same way and a typo in any of them is one clear error.
"""

from __future__ import annotations

import json
import os
import tomllib
from enum import Enum, StrEnum
from pathlib import Path
from typing import Any

import typer
from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from app.client.errors import CliError, Exit

DEFAULT_URL = "http://127.0.0.1:8000"
KEYS = ("url", "token", "output", "timeout", "poll_interval")


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"


def config_path() -> Path:
    """``$TIDEGATE_CONFIG``, else the platform's config dir (``~/.config/tidegate`` on Linux)."""
    explicit = os.environ.get("TIDEGATE_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    return Path(typer.get_app_dir("tidegate")) / "config.toml"


class ClientSettings(BaseSettings):
    """The client's settings. Environment: TIDEGATE_URL, TIDEGATE_TOKEN, TIDEGATE_OUTPUT,
    TIDEGATE_TIMEOUT, TIDEGATE_POLL_INTERVAL (the server's own TIDEGATE_* are ignored)."""

    model_config = SettingsConfigDict(env_prefix="TIDEGATE_", extra="ignore")

    url: str = Field(DEFAULT_URL, description="The tidegate server, e.g. http://host:8000.")
    token: SecretStr | None = Field(None, description="A bearer token (tidegate tokens create).")
    output: OutputFormat = OutputFormat.table
    timeout: float = Field(30.0, gt=0, le=3600, description="Seconds per HTTP request.")
    poll_interval: float = Field(1.0, gt=0, le=60, description="Seconds between --wait polls.")

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        v = v.strip().rstrip("/")
        if "://" not in v:
            v = "http://" + v
        if not v.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return v.removesuffix("/api/v1")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # No .env: it belongs to the server (TIDEGATE_DATABASE_URL, TIDEGATE_ADMIN_TOKEN, …).
        return (
            init_settings,
            env_settings,
            TomlConfigSettingsSource(settings_cls, toml_file=config_path()),
        )


def load_settings(**flags: Any) -> ClientSettings:
    """Settings with the given flags on top; ``None`` flags fall through to env and file."""
    given = {k: v for k, v in flags.items() if v is not None}
    try:
        return ClientSettings(**given)
    except tomllib.TOMLDecodeError as e:
        raise CliError(f"cannot read {config_path()}: {e}", Exit.USAGE) from None
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()
        )
        raise CliError(
            f"invalid setting (flag, TIDEGATE_* or {config_path()}): {problems}", Exit.USAGE
        ) from None


def check_value(key: str, value: str) -> Any:
    """One setting validated as the settings would read it, without reading any source (so a
    broken file can still be fixed with 'config set')."""
    probe = ClientSettings.model_construct()
    ClientSettings.__pydantic_validator__.validate_assignment(probe, key, value)
    checked = getattr(probe, key)
    if isinstance(checked, SecretStr):
        return checked.get_secret_value()
    return checked.value if isinstance(checked, Enum) else checked


def read_file(path: Path | None = None, *, strict: bool = True) -> dict[str, Any]:
    """The file's settings; ``strict=False`` treats an unreadable file as empty (to rewrite)."""
    path = path or config_path()
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        if not strict:
            return {}
        raise CliError(f"cannot read {path}: {e}", Exit.USAGE) from None


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    # A JSON string is a valid TOML basic string (same escapes).
    return json.dumps(str(value), ensure_ascii=False)


def write_file(values: dict[str, Any], path: Path | None = None) -> Path:
    """Write flat ``key = value`` settings, readable only by the owner (it holds a token)."""
    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(
        f"{k} = {_toml_value(v)}\n"
        for k, v in values.items()
        if isinstance(v, str | int | float | bool)  # flat settings only; tables are not ours
    )
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("# tidegate client settings (tidegate config set KEY VALUE)\n" + body)
    tmp.replace(path)
    return path
