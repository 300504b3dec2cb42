"""JSON logs (one object per line) with the request id, for the API, worker and runner alike."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from app.core.paths import private_dir, private_file
from app.core.redaction import redact_log_event

if TYPE_CHECKING:
    from app.core.config import Settings


def configure_from(settings: Settings) -> None:
    """The process's logging as its settings say (every command's entry point calls this).
    DATA_DIR is made first, private, by whichever process starts first: a folder made below
    it later with plain mkdir (runtime/, snapshots/) must not make it with the umask's mode,
    and an existing DATA_DIR is the admin's to keep as it is (docs/security.md)."""
    private_dir(settings.data_dir.absolute())
    configure_logging(
        settings.log_level,
        json=settings.log_json,
        file=settings.log_file,
        terminal_level=settings.log_terminal_level,
    )


def configure_logging(
    level: str = "INFO",
    *,
    json: bool = True,
    file: Path | None = None,
    terminal_level: str | None = None,
) -> None:
    """Log lines to stderr; with ``file``, every line goes there and the terminal gets only
    ``terminal_level`` and above (``tidegate run`` keeps its start-up lines off the screen)."""
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact_log_event,
    ]
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if terminal_level:
        handlers[0].setLevel(terminal_level.upper())
    if file is not None:
        private_file(file)
        handlers.append(logging.FileHandler(file, encoding="utf-8"))
    for handler in handlers:
        handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = handlers
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    # Our middleware logs each request with its id; uvicorn's access log would repeat it.
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    # Every backend poll would be an INFO line otherwise.
    logging.getLogger("httpx").setLevel(logging.WARNING)
