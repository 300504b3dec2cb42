"""Keyset pagination: an opaque cursor that stays fast however deep the page."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Annotated, Any, Generic, TypeVar

from fastapi import Query
from pydantic import BaseModel, Field
from sqlalchemy import Select
from sqlalchemy.orm import InstrumentedAttribute, Session

from app.core.errors import BadRequest

T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    items: list[T]
    next_cursor: str | None = Field(
        None, description="Pass as `cursor` to get the next page; null on the last page."
    )


def encode_cursor(key: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> Any:
    if cursor is None:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        return json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, UnicodeDecodeError):
        raise BadRequest(
            "The cursor is not one this API issued; use next_cursor from a previous page."
        ) from None


def cut_page(rows: list[T], limit: int, key: Callable[[T], Any]) -> tuple[list[T], str | None]:
    """``rows`` read for one more than ``limit``: this page's rows, and the cursor of the next
    (``key`` of this page's last row), or None."""
    if len(rows) > limit:
        return rows[:limit], encode_cursor(key(rows[limit - 1]))
    return rows, None


def take_page(
    session: Session, stmt: Select[T], limit: int, key: Callable[[T], Any]
) -> tuple[list[T], str | None]:
    """Run ``stmt`` (already filtered and ordered) for one row more than ``limit``."""
    return cut_page(list(session.scalars(stmt.limit(limit + 1))), limit, key)


def cursor_key(cursor: str | None, kind: type, *, strict: bool = False) -> Any:
    """The key a cursor carries, or None for the first page: a cursor of the wrong type is
    ignored (the first page), or refused with ``strict``."""
    after = decode_cursor(cursor)
    if after is not None and not isinstance(after, kind):
        if strict:
            raise BadRequest("The cursor is not one this API issued.")
        return None
    return after


def keyset_page(
    session: Session,
    stmt: Select[T],
    column: InstrumentedAttribute[Any],
    *,
    limit: int,
    cursor: str | None,
    descending: bool = False,
    strict: bool = False,
) -> tuple[list[T], str | None]:
    """One page of ``stmt`` ordered by the unique ``column``, after ``cursor``."""
    after = cursor_key(cursor, column.type.python_type, strict=strict)
    if after is not None:
        stmt = stmt.where(column < after if descending else column > after)
    stmt = stmt.order_by(column.desc() if descending else column)
    return take_page(session, stmt, limit, lambda row: getattr(row, column.key))


Limit = Annotated[int, Query(ge=1, le=500, description="Page size (1 to 500).")]
Cursor = Annotated[
    str | None, Query(max_length=512, description="next_cursor from the previous page.")
]
