"""A driver tidegate started must hold its run token: on a real SparkSession, the runtime
without one, or with a wrong one, refuses to start and says why (before any query runs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from app.runtime.control import TOKEN_ENV, ControlPlaneRefused, Runtime
from tests.e2e.stack import running_stack

pytestmark = pytest.mark.spark


@pytest.fixture
def managed(spark: SparkSession, tmp_path: Path) -> Iterator[str]:
    """The session configured the way the worker configures a driver of run 1."""
    with running_stack(tmp_path) as stack:
        keys = {
            "spark.tidegate.api_url": stack.url,
            "spark.tidegate.run_id": "1",
            "spark.tidegate.attempt": "0",
        }
        for key, value in keys.items():
            spark.conf.set(key, value)
        try:
            yield stack.url
        finally:
            for key in keys:
                spark.conf.unset(key)


def test_no_token_is_refused_and_says_so(
    spark: SparkSession, managed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(ControlPlaneRefused, match=f"{TOKEN_ENV} is not set.*Resubmit"):
        Runtime.from_spark(spark)


def test_a_wrong_token_is_refused_and_says_so(
    spark: SparkSession, managed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "tg_not-a-real-token")
    with pytest.raises(ControlPlaneRefused, match="refused this run's token"):
        Runtime.from_spark(spark)


def test_an_unmanaged_session_needs_no_token(spark: SparkSession) -> None:
    assert spark.conf.get("spark.tidegate.run_id", None) is None
    assert Runtime.from_spark(spark).managed is False
