"""Shared pieces of the request and response models."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    StringConstraints,
    field_validator,
)

from app.core.redaction import redact

# Names end up in checkpoint paths and URLs: no slashes, no dots-only names, no spaces.
Name = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$", max_length=128),
]
NAME_HINT = "letters, digits, '_', '.', '-', starting with a letter or digit, at most 128"

# Free-form JSON (source options, reported offsets) is stored and echoed back; nesting past
# what the response serialiser handles (~250 levels) would turn a request into a 500.
MAX_JSON_DEPTH = 32


def _shallow(value: Any) -> Any:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_JSON_DEPTH:
                raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return value


def _has_nul(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set):
            stack.extend(item)
    return False


JsonValue = Annotated[Any, AfterValidator(_shallow)]
JsonObject = Annotated[dict[str, Any], AfterValidator(_shallow)]


class Body(BaseModel):
    """Request bodies refuse unknown fields, so a typo is an error rather than ignored."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        # PostgreSQL cannot store NUL in text: refuse it here, as a field error, before any
        # precondition (If-Match) or state check runs.
        if _has_nul(value):
            raise ValueError("must not contain a NUL character (\\u0000)")
        return value


class Response(BaseModel):
    model_config = ConfigDict(from_attributes=True)


def redacting(*fields: str) -> Any:
    """A validator for response models: these fields (conf, options, params, errors) are
    shown through ``app.core.redaction.redact``, whoever builds the response."""

    def _redact(cls: type, value: Any) -> Any:
        return redact(value)

    return field_validator(*fields)(classmethod(_redact))
