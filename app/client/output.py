"""How results look: kubectl-style tables for people, JSON or YAML documents for scripts.

Documents go to stdout untouched (what the API returned, lists as plain arrays), so
``tidegate jobs list -o json | jq '.[].name'`` works; hints and progress go to stderr.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import typer
import yaml
from rich.console import Console
from rich.table import Table

from app.client.config import OutputFormat

Cell = Callable[[dict[str, Any]], Any]
Column = tuple[str, str | Cell]


def human_size(n: Any) -> str:
    """1536 → '1.5 KiB'. Sizes in the API are bytes; people read powers of 1024."""
    if not isinstance(n, int | float) or isinstance(n, bool):
        return "-" if n is None else str(n)
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} PiB"  # pragma: no cover


def human_time(value: Any) -> str:
    """An API timestamp as ISO-8601 in UTC, to the second: '2026-11-22T06:00:07Z'."""
    if not value:
        return "-"
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    # The API's times are UTC; a naive one is read as UTC, never as the reader's zone.
    moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch_ms_time(value: Any) -> str:
    """Epoch milliseconds (how the API carries event times) as ISO-8601 UTC; the
    milliseconds only when there are some: 1795443607000 → '2026-11-23T14:20:07Z'."""
    if not isinstance(value, int) or isinstance(value, bool):
        return cell(value)
    try:
        moment = datetime.fromtimestamp(value / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return str(value)
    millis = value % 1000
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{millis:03d}Z" if millis else f"{text}Z"


def cell(value: Any) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def pick(*keys: str) -> Cell:
    """The first present key: tolerant of field names still settling on new endpoints."""

    def get(row: dict[str, Any]) -> Any:
        for key in keys:
            if row.get(key) is not None:
                return row[key]
        return None

    return get


class Printer:
    """Writes results in the chosen format; created per command so tests capture it."""

    def __init__(self, fmt: OutputFormat) -> None:
        self.fmt = fmt
        probe = Console()
        # Piped output is not squeezed to 80 columns: scripts grep and awk it.
        self.console = Console(width=None if probe.is_terminal else 512, highlight=False)
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)

    @property
    def is_table(self) -> bool:
        return self.fmt is OutputFormat.table

    def document(self, data: Any) -> None:
        if self.fmt is OutputFormat.yaml:
            typer.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip("\n"))
        else:
            typer.echo(json.dumps(data, indent=2, ensure_ascii=False))

    def emit(self, data: Any, table: Callable[[], None]) -> None:
        """The document for json/yaml, else whatever ``table`` draws."""
        if self.is_table:
            table()
        else:
            self.document(data)

    def table(
        self, rows: Iterable[dict[str, Any]], columns: Sequence[Column], empty: str = "Nothing."
    ) -> None:
        rows = list(rows)
        if not rows:
            self.hint(empty)
            return
        grid = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
        for header, _ in columns:
            grid.add_column(header, overflow="fold")
        for row in rows:
            grid.add_row(*(cell(get(row) if callable(get) else row.get(get)) for _, get in columns))
        self._print(grid)

    def fields(self, row: dict[str, Any], columns: Sequence[Column] | None = None) -> None:
        """One object as KEY  value lines; nested values as compact JSON."""
        grid = Table(box=None, pad_edge=False, show_edge=False, show_header=False)
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        pairs = (
            [(h, get(row) if callable(get) else row.get(get)) for h, get in columns]
            if columns
            else [(k.replace("_", " ").upper(), v) for k, v in row.items()]
        )
        for header, value in pairs:
            grid.add_row(header, cell(value))
        self._print(grid)

    def _print(self, grid: Table) -> None:
        # Rich pads every cell to its column's width; trailing blanks only get in awk's way.
        with self.console.capture() as captured:
            self.console.print(grid)
        typer.echo("\n".join(line.rstrip() for line in captured.get().splitlines()), color=True)

    def line(self, text: str) -> None:
        """A result line on stdout (table mode)."""
        self.console.print(text, markup=False)

    def hint(self, text: str) -> None:
        """Advice and progress on stderr, never mixed into parseable output."""
        self.err.print(text, markup=False, style="dim")
