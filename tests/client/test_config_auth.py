"""Where the CLI finds its server and token (flags > environment > config file), what it says
when it cannot get in or cannot get there, tokens over the API, and the entry point."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import typer

from app.cli import cli as root_cli
from app.core.config import get_settings
from app.devtools.spark_local import find_free_port as free_port
from tests.client.conftest import Cli, Live
from tests.conftest import ADMIN_TOKEN

ROOT = Path(__file__).resolve().parents[2]


def test_flags_beat_environment_beat_file(
    tg: Cli, live: Live, cli_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    cli_env.write_text(f'url = "{dead}"\noutput = "json"\n')
    # the environment's URL wins over the file's; the file's output applies
    assert tg.ok("jobs", "list").stdout.strip() == "[]"
    assert "No jobs yet" in tg.ok("jobs", "list", "--output", "table").stderr  # flag wins
    monkeypatch.delenv("TIDEGATE_URL")
    line = tg.fails(6, "jobs", "list")  # now the file's (dead) URL
    assert dead in line
    assert tg.ok("jobs", "list", "--url", live.url).stdout.strip() == "[]"
    monkeypatch.setenv("TIDEGATE_URL", live.url)
    monkeypatch.setenv("TIDEGATE_OUTPUT", "yaml")
    assert tg.ok("jobs", "list").stdout.strip() == "[]"  # YAML's empty list, from the env


def test_server_down_is_one_line_with_the_way_out(tg: Cli) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    line = tg.fails(6, "jobs", "list", "--url", url)
    assert line == (
        f"error: cannot reach tidegate at {url} (connection refused). Start it with "
        "'make run' (or 'tidegate run'), or point --url / TIDEGATE_URL at a running server."
    )
    assert tg.fails(6, "submit", "j", "--version", "1", "--url", url) == line


def test_auth_failures(tg: Cli, job: str, token_for: Callable[[str], str]) -> None:
    line = tg.fails(5, "jobs", "list", "--token", "tg_wrong")
    assert line.startswith("error: Unauthorized:") and "TIDEGATE_TOKEN" in line
    reader = token_for("read")
    assert tg.json("jobs", "list", "--token", reader)[0]["name"] == "clicks"
    assert "Forbidden" in tg.fails(5, "submit", "clicks", "--version", "1", "--token", reader)
    assert "refused" in tg.fails(5, "status", "--token", "tg_wrong")


def test_status(tg: Cli, live: Live) -> None:
    doc = tg.json("status")
    assert doc["url"] == live.url and doc["token"] == {"ok": True}
    assert doc["health"]["status"] == "ok"
    assert "accepted" in tg.ok("status").stdout


def test_config_set_show_unset_and_login(
    tg: Cli, live: Live, cli_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert tg.ok("config", "path").stdout.strip() == str(cli_env)
    tg.ok("config", "set", "output", "yaml")
    tg.ok("config", "set", "url", "tidegate.internal:8000/")
    assert 'url = "http://tidegate.internal:8000"' in cli_env.read_text()  # normalised
    assert "Input should be 'table', 'json' or 'yaml'" in tg.fails(
        2, "config", "set", "output", "xml"
    )
    assert "unknown setting 'colour'" in tg.fails(2, "config", "set", "colour", "red")
    assert "'token' is not set" in tg.fails(4, "config", "unset", "token")
    tg.ok("config", "unset", "url")

    monkeypatch.delenv("TIDEGATE_URL")
    monkeypatch.delenv("TIDEGATE_TOKEN")
    assert "Unauthorized" in tg.fails(5, "login", "--url", live.url, "--token", "tg_wrong")
    assert "url" not in cli_env.read_text()  # a refused login saves nothing
    tg.ok("login", "--url", live.url, "--token", ADMIN_TOKEN)
    assert stat.S_IMODE(os.stat(cli_env).st_mode) == 0o600  # it holds a token
    assert tg.ok("jobs", "list").stdout.strip() == "[]"  # from the file alone, as YAML
    shown = tg.ok("config", "show").stdout
    assert live.url in shown and ADMIN_TOKEN not in shown  # the token is never printed whole

    cli_env.write_text("url = [broken\n")
    assert "cannot read" in tg.fails(2, "jobs", "list")
    tg.ok("config", "set", "output", "json")  # still fixable: set reads the file, not the settings


def test_tokens_create_on_the_database_then_list_issue_revoke_via_the_api(
    tg: Cli, database_url: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    monkeypatch.setenv("TIDEGATE_DATABASE_URL", database_url)
    get_settings.cache_clear()  # an earlier test in this process may have cached other settings
    request.addfinalizer(get_settings.cache_clear)
    secret = tg.ok("tokens", "create", "--name", "ops", "--scope", "operate").stdout.strip()
    assert secret.startswith("tg_")
    assert [t["name"] for t in tg.json("tokens", "list")] == ["ops"]
    issued = tg.json("tokens", "issue", "--name", "dashboard", "--scope", "read")
    assert issued["token"].startswith("tg_") and issued["scope"] == "read"
    assert tg.json("jobs", "list", "--token", issued["token"]) == []
    tg.ok("tokens", "revoke", str(issued["id"]))
    tg.fails(5, "jobs", "list", "--token", issued["token"])
    tg.fails(4, "tokens", "revoke", "999")
    assert "scope" in tg.fails(2, "tokens", "issue", "--name", "x", "--scope", "root")
    # an operate token may not manage tokens
    assert "Forbidden" in tg.fails(5, "tokens", "list", "--token", secret)


def _commands(group: object, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    out = []
    for name, cmd in getattr(group, "commands", {}).items():
        if hasattr(cmd, "commands"):
            out += _commands(cmd, (*path, name))
        else:
            out.append(((*path, name), cmd))
    return out


def test_source_kinds(tg: Cli) -> None:
    kinds = {k["kind"]: k for k in tg.json("source-kinds")}
    assert kinds["eventlog"]["drain"] == "native" and "OFFSET" in kinds["eventlog"]["startpoints"]
    assert tg.yaml("source-kinds") == list(kinds.values())
    table = tg.ok("source-kinds").stdout.splitlines()
    assert table[0].split() == ["KIND", "STARTPOINTS", "DRAIN", "DRAIN", "HANDOFF", "NOTE"]
    eventlog = next(line for line in table if line.startswith("eventlog "))
    assert " native " in eventlog and "OLDEST" in eventlog
    assert "Unauthorized" in tg.fails(5, "source-kinds", "--token", "tg_wrong")


def test_metrics(tg: Cli, job: str) -> None:
    text = tg.ok("metrics").stdout
    assert "# TYPE tidegate_http_requests_total counter" in text
    # the job fixture's POST /jobs was counted, by operation
    assert 'method="POST",operation="job.create",status="201"' in text, text[:2000]
    only = tg.ok("metrics", "--match", "tidegate_http_request_duration").stdout.splitlines()
    assert only and all("tidegate_http_request_duration" in line for line in only)
    assert "Unauthorized" in tg.fails(5, "metrics", "--token", "tg_wrong")


def test_every_client_command_has_help_with_an_example(tg: Cli) -> None:
    root = typer.main.get_command(root_cli)
    client = [
        (path, cmd)
        for path, cmd in _commands(root)
        if getattr(getattr(cmd, "callback", None), "__module__", "").startswith("app.client")
    ]
    assert len(client) > 40
    for path, _ in client:
        result = tg(*path, "--help")
        assert result.exit_code == 0, (path, result.output)
        assert "Example: tidegate " in result.output, path
        assert "--url" in result.output or path[0] == "config", path


def test_server_commands_are_still_there(tg: Cli) -> None:
    listed = tg.ok("--help").stdout
    for name in ("api", "worker", "migrate", "run", "runner", "spark", "events", "tokens"):
        assert f" {name} " in listed, name
    tokens = tg.ok("tokens", "--help").stdout
    assert all(f" {c} " in tokens for c in ("create", "list", "revoke", "issue"))


def test_the_installed_entry_point(live: Live, cli_env: Path) -> None:
    """The real process: the one registration line in app/cli.py, exit codes, no traceback."""
    env = {**os.environ, "TIDEGATE_URL": live.url, "TIDEGATE_TOKEN": ADMIN_TOKEN}
    ok = subprocess.run(
        [sys.executable, "-m", "app.cli", "jobs", "list", "-o", "json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0 and ok.stdout.strip() == "[]", ok.stderr
    down = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli",
            "jobs",
            "show",
            "x",
            "--url",
            f"http://127.0.0.1:{free_port()}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert down.returncode == 6 and down.stdout == ""
    assert len(down.stderr.strip().splitlines()) == 1 and "make run" in down.stderr
