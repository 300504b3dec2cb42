"""docker/grafana/tidegate.json: the structure Grafana needs to load it, and every PromQL
expression names only metrics that a real scrape of the API (with seeded data) exports."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine

from app.core.config import Settings
from app.core.db import make_sessionmaker
from app.worker.core.context import WorkerContext
from app.worker.loop import Worker
from tests.support.api import make_current_run, version_body

DASHBOARD = Path(__file__).resolve().parents[2] / "docker" / "grafana" / "tidegate.json"

PROMQL_WORDS = {
    # functions and aggregations the dashboard may use
    *[
        "sum",
        "count",
        "max",
        "min",
        "avg",
        "topk",
        "bottomk",
        "rate",
        "irate",
        "increase",
        "deriv",
        "delta",
        "clamp_min",
        "clamp_max",
        "histogram_quantile",
        "label_values",
        "abs",
        "time",
        "vector",
        "scalar",
    ],
    # keywords
    *[
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "and",
        "or",
        "unless",
        "bool",
        "offset",
    ],
}
SUFFIXES = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}


def _panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for panel in dashboard["panels"]:
        out.append(panel)
        out.extend(panel.get("panels", []))  # panels of collapsed rows
    return out


def _exprs(dashboard: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for p in _panels(dashboard) for t in p.get("targets", [])]
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            exprs.append(var["query"]["query"])
    return exprs


def metric_names(expr: str) -> set[str]:
    """The metric names in a PromQL expression: identifiers once strings, label matchers,
    ranges and grouping clauses are gone, that are not functions or keywords."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    text = re.sub(r"label_values\(\s*([a-zA-Z_:][\w:]*)\s*,\s*\w+\s*\)", r"\1", text)
    names = set(re.findall(r"[a-zA-Z_:][\w:]*", text))
    return {n for n in names if n not in PROMQL_WORDS and not n.isdigit()} - {"e"}


def exported(client: TestClient) -> set[str]:
    r = client.get("/metrics")
    assert r.status_code == 200
    names = set()
    for family in text_string_to_metric_families(r.text):
        names.add(family.name)
        names.update(family.name + s for s in SUFFIXES.get(family.type, []))
        names.update(s.name for s in family.samples)
    return names


def test_dashboard_structure_is_what_grafana_loads() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    assert dashboard["uid"] and dashboard["title"]
    panels = _panels(dashboard)
    ids = [p["id"] for p in panels]
    assert all(isinstance(i, int) for i in ids) and len(ids) == len(set(ids)), ids
    cells: dict[tuple[int, int], str] = {}
    for p in panels:
        grid = p["gridPos"]
        assert {"h", "w", "x", "y"} <= grid.keys(), p["title"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, p["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):  # panels do not overlap
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{p['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = p["title"]
        if p["type"] == "row":
            continue
        assert p["datasource"]["type"] == "prometheus", p["title"]
        assert p["targets"], p["title"]
        ref_ids = [t["refId"] for t in p["targets"]]
        assert len(ref_ids) == len(set(ref_ids)), p["title"]
        for t in p["targets"]:
            assert t["expr"].strip() and t["datasource"] == p["datasource"], p["title"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["job"]["type"] == "query"
    # one job's queries: the job template variable is used by a row of panels
    assert sum('job="$job"' in e for e in _exprs(dashboard)) >= 8
    titles = [p["title"] for p in panels if p["type"] == "row"]
    assert titles == ["Fleet", "Job $job", "Operations"]


def test_metric_names_parse_from_promql() -> None:
    assert metric_names(
        'histogram_quantile(0.95, sum by (kind, le) (rate(a_bucket{job="$job"}[1h])))'
    ) == {"a_bucket"}
    assert metric_names('b > 3 * clamp_min(c, 5) and on (job) d{state="x"} == 1') == {
        "b",
        "c",
        "d",
    }


def test_every_dashboard_query_names_an_exported_metric(
    client: TestClient, db: Engine, settings: Settings
) -> None:
    client.post("/api/v1/clusters", json={"name": "local", "kind": "livy", "url": "http://x:9"})
    client.post("/api/v1/jobs", json={"name": "j"})
    client.post("/api/v1/jobs/j/versions", json=version_body())
    run_id, token = make_current_run(db, "j")
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    report = {
        "query": "events",
        "batch_id": 1,
        "timestamp": now,
        "num_input_rows": 10,
        "watermark": now,
        "sources": [{"end_offset": {"0": 1}, "latest_offset": {"0": 5}}],
        "state_operators": [{"num_rows_total": 1, "memory_used_bytes": 10}],
        "durations_ms": {"triggerExecution": 100},
    }
    auth = {"Authorization": f"Bearer {token}"}
    assert client.post(f"/api/v1/runs/{run_id}/progress", headers=auth, json=report).is_success
    client.post("/api/v1/jobs", json={"name": "k"})
    client.post("/api/v1/jobs/k/versions", json=version_body())
    assert client.post("/api/v1/jobs/k/submit", json={"version": 1}).status_code == 202
    Worker(WorkerContext(make_sessionmaker(db), settings, "w")).beat()

    names = exported(client)
    dashboard = json.loads(DASHBOARD.read_text())
    used = set().union(*(metric_names(e) for e in _exprs(dashboard)))
    assert used, "no metric found in the dashboard's queries"
    assert used <= names, f"not exported by tidegate: {sorted(used - names)}"
    # The whole story is on the dashboard: every store metric family is shown somewhere.
    store = {n for n in names if n.startswith("tidegate_") and "_http_" not in n}
    shown = {n.removesuffix("_total").removesuffix("_bucket") for n in used}
    families = {n.removesuffix("_total").removesuffix("_bucket") for n in store}
    missing = {n for n in families if n not in shown and not n.endswith(("_sum", "_count"))}
    assert missing <= {"tidegate_metrics_collect_seconds"}, sorted(missing)
