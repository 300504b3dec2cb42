from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.chaos.harness import Chaos, chaos_stack
from tests.support.chaos.pg import embedded  # noqa: F401  (a PostgreSQL a test may crash)


@pytest.fixture(scope="module")
def chaos(tmp_path_factory: pytest.TempPathFactory, livy_runner: str) -> Iterator[Chaos]:
    """A tidegate stack of this module's own (its workers get killed) on the session's
    local runner (the session's Spark, not another one)."""
    with chaos_stack(tmp_path_factory.mktemp("chaos"), livy_runner) as result:
        yield result
