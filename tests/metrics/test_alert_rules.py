"""docker/prometheus: the alert rules are valid and behave as their unit tests say
(`promtool test rules docker/prometheus/alerts.test.yml`), and prometheus.yml checks."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

PROMETHEUS_DIR = Path(__file__).resolve().parents[2] / "docker" / "prometheus"


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool not installed (Debian: apt-get install prometheus)")
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool(), *args],
        cwd=PROMETHEUS_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_alert_rules_pass_their_promtool_unit_tests() -> None:
    proc = _run("test", "rules", "alerts.test.yml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_every_alert_has_a_unit_test_and_the_issue_s_alerts_exist() -> None:
    rules = yaml.safe_load((PROMETHEUS_DIR / "alerts.yml").read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"]}
    assert {
        "TidegateJobFailed",
        "TidegateRestartLoop",
        "TidegateQueryRestartLoop",
        "TidegateBacklogGrowing",
        "TidegateWatermarkDelayGrowing",
        "TidegateQueryNoProgress",
        "TidegateOperationStuck",
        "TidegateNoLiveWorker",
        "TidegateWatermarkAhead",
        "TidegateLateRowsDropped",
    } <= alerts
    tests = yaml.safe_load((PROMETHEUS_DIR / "alerts.test.yml").read_text())
    tested = {
        case["alertname"]
        for test in tests["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert alerts == tested, f"alerts without a firing unit test: {sorted(alerts - tested)}"


def test_prometheus_config_checks(tmp_path: Path) -> None:
    # The config names the rules where the compose service mounts them; check a copy that
    # points at this checkout instead.
    config = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    assert config["rule_files"] == ["/etc/prometheus/alerts.yml"]
    # tidegate's `job` label names the tidegate job; without this Prometheus renames it.
    assert all(scrape["honor_labels"] is True for scrape in config["scrape_configs"])
    config["rule_files"] = [str(PROMETHEUS_DIR / "alerts.yml")]
    token = tmp_path / "token"
    token.write_text("x")
    for scrape in config["scrape_configs"]:
        scrape["authorization"]["credentials_file"] = str(token)
    local = tmp_path / "prometheus.yml"
    local.write_text(yaml.safe_dump(config))
    proc = _run("check", "config", str(local))
    assert proc.returncode == 0, proc.stdout + proc.stderr
