"""Suite sizes: CI runs the bounded smoke size; ``make chaos`` sets TIDEGATE_SUITE=full.

One switch for the chaos, fuzz and security suites, so any of them runs in full with
``TIDEGATE_SUITE=full pytest tests/chaos``.
"""

from __future__ import annotations

import os

FULL = os.environ.get("TIDEGATE_SUITE", "smoke").lower() == "full"


def pick(smoke: int, full: int) -> int:
    """``smoke`` in CI, ``full`` under ``make chaos``."""
    return full if FULL else smoke
