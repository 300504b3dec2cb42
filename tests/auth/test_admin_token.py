"""The bootstrap admin token: weak ones (short, placeholders, few guesses by zxcvbn's
estimate) stop the process at start-up with a message that says how to make a good one."""

from __future__ import annotations

import hashlib
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.core.config import Settings
from app.core.embedded import bootstrap_admin_token
from tests.conftest import ADMIN_TOKEN

ROOT = Path(__file__).resolve().parents[2]
WEAK = [
    "change-me",
    "admin",
    "x" * 31,
    "a" * 64,  # long but one character repeated
    "change-me-change-me-change-me-change-me",  # long placeholder
    # Long, many characters, no placeholder, and still guessed in moments (issue 26, #8):
    "12345678123456781234567812345678",  # a repeated sequence
    "qwertyuiopasdfghjklzxcvbnmqwertyuiop",  # keyboard rows
    "Password1234Password1234Password",  # a word and a sequence, repeated
    # The project's own words, as a person names a secret (issue 51 L3):
    "TidegateAdminTokenProductionCluster01",
    "tidegate-admin-token-for-production-2026",
    "tidegate_prod_kafka_streaming_secret_1",
    # The hex digest of a word is as guessable as the word:
    hashlib.sha256(b"admin").hexdigest(),
    hashlib.sha256(b"tidegate\n").hexdigest(),  # echo tidegate | sha256sum
    hashlib.md5(b"password").hexdigest(),  # what a person might do
    hashlib.sha512(b"sunshine").hexdigest(),
]


@pytest.mark.parametrize("token", WEAK)
def test_weak_admin_tokens_are_refused(token: str) -> None:
    with pytest.raises(ValidationError, match=r"secrets\.token_urlsafe"):
        Settings(admin_token=token)  # type: ignore[arg-type]


def test_strong_admin_tokens_are_accepted() -> None:
    # What docs and compose suggest (openssl rand -hex 32, token_urlsafe), and the tests' own.
    for token in (
        secrets.token_urlsafe(32),
        secrets.token_hex(16),
        secrets.token_hex(32),
        hashlib.sha256(secrets.token_bytes(32)).hexdigest(),
        ADMIN_TOKEN,
    ):
        settings = Settings(admin_token=token)  # type: ignore[arg-type]
        assert settings.admin_token is not None


def test_the_api_refuses_to_start_with_the_old_compose_default(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "TIDEGATE_ADMIN_TOKEN": "change-me",
        "TIDEGATE_DATA_DIR": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "app.cli", "api"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode != 0
    assert "TIDEGATE_ADMIN_TOKEN" in proc.stderr
    assert "secrets.token_urlsafe(32)" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "pg").exists()  # refused before anything started


def test_a_weak_token_kept_in_the_data_dir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "admin-token").write_text("change-me\n")
    with pytest.raises(SystemExit, match="token_urlsafe"):
        bootstrap_admin_token(Settings(data_dir=tmp_path))
