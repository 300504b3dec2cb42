"""The plumbing every client command shares: connection options, one error path, files.

``@command(app, "name")`` adds ``--url``, ``--token`` and ``--output`` to a function that
takes a ``Ctx`` first, so each command only says what it does; every failure goes through
one place that prints a single ``error:`` line and exits with a documented code.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
import yaml
from typer.core import TyperGroup

from app.client.api import Api
from app.client.config import ClientSettings, OutputFormat, load_settings
from app.client.errors import CliError, Exit
from app.client.output import Printer

F = TypeVar("F", bound=Callable[..., Any])
PANEL = "Connection"

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="tidegate server (env TIDEGATE_URL, config url; default http://127.0.0.1:8000).",
        rich_help_panel=PANEL,
        show_default=False,
    ),
]
TokenOption = Annotated[
    str | None,
    typer.Option(
        "--token",
        help="Bearer token (env TIDEGATE_TOKEN, config token).",
        rich_help_panel=PANEL,
        show_default=False,
    ),
]
OutputOption = Annotated[
    OutputFormat | None,
    typer.Option(
        "--output",
        "-o",
        help="table (people), json or yaml (scripts); env TIDEGATE_OUTPUT, default table.",
        rich_help_panel=PANEL,
        show_default=False,
    ),
]
Limit = Annotated[
    int, typer.Option("--limit", min=1, help="Show at most this many (newest first).")
]
All = Annotated[bool, typer.Option("--all", help="Follow every page (ignores --limit).")]


@dataclass
class Ctx:
    """What a command works with: settings, the API and a printer for the chosen format."""

    settings: ClientSettings
    out: Printer
    _api: Api | None = field(default=None, repr=False)

    @property
    def api(self) -> Api:
        if self._api is None:
            token = self.settings.token.get_secret_value() if self.settings.token else None
            self._api = Api(self.settings.url, token, self.settings.timeout)
        return self._api

    def list(self, path: str, limit: int, all_: bool, **params: Any) -> list[dict[str, Any]]:
        items = list(self.api.pages(path, None if all_ else limit, **params))
        if self.api.more and self.out.is_table:
            self.out.hint(f"(first {len(items)} shown; --limit N or --all for more)")
        return items

    def close(self) -> None:
        if self._api is not None:
            self._api.close()


_COMMON = [
    inspect.Parameter(
        f"tg_{name}", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation
    )
    for name, annotation in (("url", UrlOption), ("token", TokenOption), ("output", OutputOption))
]


def _debug() -> bool:
    return os.environ.get("TIDEGATE_DEBUG", "") not in ("", "0", "false")


def guarded(body: Callable[[], None]) -> None:
    """Run ``body``; turn every expected failure into one ``error:`` line and an exit code."""
    err = Printer(OutputFormat.table).err
    try:
        body()
    except (typer.Exit, typer.Abort):
        raise
    except CliError as e:
        err.print(f"error: {e.message}", markup=False, style="red")
        raise typer.Exit(int(e.code)) from None
    except KeyboardInterrupt:
        err.print("interrupted", markup=False)
        raise typer.Exit(int(Exit.INTERRUPTED)) from None
    except Exception as e:
        if _debug():
            raise
        err.print(
            f"error: unexpected {type(e).__name__}: {' '.join(str(e).split())[:300]} "
            "(TIDEGATE_DEBUG=1 shows the traceback)",
            markup=False,
            style="red",
        )
        raise typer.Exit(int(Exit.FAILED)) from None


def run_command(fn: Callable[..., Any], flags: dict[str, Any], kwargs: dict[str, Any]) -> None:
    """Load settings (flags over env over file), then run ``fn(ctx, **kwargs)`` guarded."""
    opened: list[Ctx] = []

    def body() -> None:
        settings = load_settings(**flags)
        opened.append(Ctx(settings, Printer(settings.output)))
        fn(opened[0], **kwargs)

    try:
        guarded(body)
    finally:
        for ctx in opened:
            ctx.close()


def command(app: typer.Typer, name: str, **kwargs: Any) -> Callable[[F], F]:
    """Register ``fn(ctx: Ctx, ...)`` as a command with the connection options added."""

    def decorate(fn: F) -> F:
        sig = inspect.signature(fn, eval_str=True)
        own = [p for p in list(sig.parameters.values())[1:]]  # drop ctx

        def wrapper(**values: Any) -> None:
            flags = {k: values.pop(f"tg_{k}") for k in ("url", "token", "output")}
            run_command(fn, flags, values)

        params = own + _COMMON
        wrapper.__signature__ = sig.replace(parameters=params, return_annotation=None)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        wrapper.__name__ = fn.__name__
        wrapper.__qualname__ = fn.__qualname__
        wrapper.__doc__ = fn.__doc__
        wrapper.__module__ = fn.__module__
        app.command(name, **kwargs)(wrapper)
        return fn

    return decorate


class DefaultListGroup(TyperGroup):
    """A group whose first argument, when it is no sub-command, means ``list ARG``:
    ``tidegate runs JOB`` is ``tidegate runs list JOB``, next to ``tidegate runs show ID``."""

    default_command = "list"

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


class OptionsMeanListGroup(TyperGroup):
    """A group that, called bare or with options only, means ``list``:
    ``tidegate events --job J`` is ``tidegate events list --job J``."""

    default_command = "list"

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args or (args[0].startswith("-") and args[0] not in ("--help", "-h")):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


def load_document(path: Path | str) -> Any:
    """A YAML or JSON file ('-' = stdin), or a usage error naming the file and the problem."""
    name = str(path)
    try:
        text = sys.stdin.read() if name == "-" else Path(path).read_text()
    except OSError as e:
        raise CliError(f"cannot read {name}: {e.strerror or e}", Exit.USAGE) from None
    try:
        if name.endswith(".json"):
            return json.loads(text)
        return yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as e:
        first = " ".join(str(e).split())
        raise CliError(f"{name} is not valid YAML or JSON: {first}", Exit.USAGE) from None


def load_mapping(path: Path | str, what: str) -> dict[str, Any]:
    doc = load_document(path)
    if not isinstance(doc, dict):
        raise CliError(
            f"{path} must hold a {what} (a mapping), not {type(doc).__name__}", Exit.USAGE
        )
    return doc


def exclusive(**given: object) -> None:
    """Refuse mutually exclusive options given together (a usage error, exit 2)."""
    names = [k for k, v in given.items() if v is not None and v is not False]
    if len(names) > 1:
        flags = " and ".join("--" + n.replace("_", "-") for n in names)
        raise CliError(f"{flags} exclude each other; give one", Exit.USAGE)


def confirm(question: str) -> None:
    """Ask on a terminal; a 'no' leaves everything as it was (exit 1)."""
    if not typer.confirm(question, default=False):
        raise CliError("nothing done", Exit.FAILED)
