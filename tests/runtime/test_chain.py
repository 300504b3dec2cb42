from __future__ import annotations

import pytest

from tidegate_runtime.driver.drain_order import drain_stages


def test_upstream_queries_drain_first() -> None:
    queries = [
        {"name": "report", "upstream": ["enrich", "dedupe"]},
        {"name": "enrich", "upstream": ["ingest"]},
        {"name": "ingest"},
        {"name": "dedupe", "upstream": ["ingest"]},
        {"name": "audit"},
    ]
    assert drain_stages(queries) == [["audit", "ingest"], ["dedupe", "enrich"], ["report"]]
    assert drain_stages([{"name": "only"}]) == [["only"]]


def test_a_loop_is_refused() -> None:
    with pytest.raises(ValueError, match="cycle"):
        drain_stages([{"name": "a", "upstream": ["b"]}, {"name": "b", "upstream": ["a"]}])
