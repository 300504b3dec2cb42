"""Suite sizes: CI runs the bounded smoke size; ``make chaos`` sets TIDEGATE_SUITE=full.

One switch for the chaos, fuzz and security suites, so any of them runs in full with
``TIDEGATE_SUITE=full pytest -m chaos`` (``make chaos``).
"""

from __future__ import annotations

import os
import random

import pytest

FULL = os.environ.get("TIDEGATE_SUITE", "smoke").lower() == "full"


def pick(smoke: int, full: int) -> int:
    """``smoke`` in CI, ``full`` under ``make chaos``."""
    return full if FULL else smoke


def _chaos_seed() -> int:
    """The fault tests' seed: ``TIDEGATE_CHAOS_SEED`` when set (to draw a failed run's
    instants again), else a fixed one at smoke size (CI draws the same each time) and a
    fresh one in full."""
    explicit = os.environ.get("TIDEGATE_CHAOS_SEED")
    if explicit:
        return int(explicit)
    return random.randrange(2**31) if FULL else 1414


CHAOS_SEED = _chaos_seed()


def under_chaos(in_ci: str) -> pytest.MarkDecorator:
    """Runs under ``make chaos`` (TIDEGATE_SUITE=full) only: a test whose feature another
    test already proves on real Spark in ``make test``. ``in_ci`` names that test and what it
    proves, and is the skip's reason in CI (``pytest -rs`` prints it)."""
    return pytest.mark.skipif(
        not FULL, reason=f"under `make chaos` (TIDEGATE_SUITE=full); in CI: {in_ci}"
    )
