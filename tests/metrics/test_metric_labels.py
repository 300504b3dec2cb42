"""Metric labels come from closed sets (issue 26, #5): anonymous requests with made-up methods
used to add a time series each, growing /metrics without bound until a restart."""

from __future__ import annotations

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from app.api.middleware import METHODS


def _methods_seen(client: TestClient) -> set[str]:
    text = client.get("/metrics").text
    return {
        sample.labels["method"]
        for family in text_string_to_metric_families(text)
        if family.name.startswith("tidegate_http_request")
        for sample in family.samples
        if "method" in sample.labels
    }


def test_made_up_methods_share_one_label(client: TestClient) -> None:
    before = len(client.get("/metrics").content)
    for i in range(200):
        r = client.request(f"BREW{i}", "/api/v1/jobs", headers={"Authorization": ""})
        assert r.status_code in (401, 405), r.status_code
    seen = _methods_seen(client)
    assert "other" in seen
    assert seen <= METHODS | {"other"}, sorted(seen - METHODS)
    # 200 made-up methods cost a few series at most, not 200.
    assert len(client.get("/metrics").content) < before + 4000
