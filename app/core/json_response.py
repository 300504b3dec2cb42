"""JSON answers serialised in one pass, for the hot reads.

A route that returns a model makes FastAPI validate it against ``response_model`` and then
serialise it (on a second worker thread for a sync route). For reads whose content is built
straight from rows already in the response's shape, that was most of the request's time
(``bench/fleet.py``, issue 24): these routes keep ``response_model`` for the docs and return
the bytes pydantic-core writes from plain dicts, in the same formats (ISO datetimes, ``Z``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic_core
from fastapi import Response


def json_response(content: Any, *, headers: Mapping[str, str] | None = None) -> Response:
    return Response(pydantic_core.to_json(content), media_type="application/json", headers=headers)
