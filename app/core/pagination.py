"""Keyset pagination: an opaque cursor that stays fast however deep the page."""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any, Generic, TypeVar

from fastapi import Query
from pydantic import BaseModel, Field

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


Limit = Annotated[int, Query(ge=1, le=500, description="Page size (1 to 500).")]
Cursor = Annotated[
    str | None, Query(max_length=512, description="next_cursor from the previous page.")
]
