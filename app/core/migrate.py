"""Alembic, driven from code: the CLI, readiness and tests all use the same config."""

from __future__ import annotations

import os
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

from app.core.db import sqlalchemy_url


def migrations_dir() -> Path:
    override = os.environ.get("TIDEGATE_MIGRATIONS_DIR")
    return Path(override) if override else Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(database_url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option(
        "file_template", "%%(year)d_%%(month).2d_%%(day).2d_%%(hour).2d%%(minute).2d_%%(slug)s"
    )
    # ConfigParser interpolation would choke on '%' in passwords.
    cfg.set_main_option("sqlalchemy.url", sqlalchemy_url(database_url).replace("%", "%%"))
    return cfg


def upgrade(database_url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str) -> None:
    command.downgrade(alembic_config(database_url), revision)


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config("postgresql://x/y")).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        exists = conn.scalar(text("select to_regclass('alembic_version') is not null"))
        if not exists:
            return None
        version: str | None = conn.scalar(text("select version_num from alembic_version"))
        return version
