"""jobs, versions and clusters: happy paths, each error path's exit code and one-line error,
and every output format parsing."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.client.conftest import Cli


def test_jobs_list_show_edit_delete(tg: Cli, job: str) -> None:
    table = tg.ok("jobs", "list").stdout
    assert table.splitlines()[0].split()[:3] == ["NAME", "STATE", "VERSION"]
    assert "clicks" in table and "idle" in table
    assert [j["name"] for j in tg.json("jobs", "list")] == ["clicks"]
    assert tg.yaml("jobs", "show", "clicks")["description"] == "per-key counts"
    assert "per-key counts" in tg.ok("jobs", "show", "clicks").stdout

    edited = tg.json("jobs", "edit", "clicks", "--max-backoff", "10m", "--max-attempts", "3")
    policy = edited["restart_policy"]
    # only the given fields change; the rest are read from the job first
    assert (policy["max_backoff"], policy["max_attempts"], policy["min_backoff"]) == (
        "10m",
        3,
        "1s",
    )
    assert edited["revision"] == 2

    tg.ok("jobs", "delete", "clicks", "--yes")
    assert tg.json("jobs", "list") == []


def test_job_errors_are_one_line_with_meaningful_exit_codes(tg: Cli, job: str) -> None:
    assert (
        tg.fails(4, "jobs", "show", "nope")
        == "error: Not found: No job named 'nope'. List jobs with GET /api/v1/jobs."
    )
    assert "Conflict" in tg.fails(3, "jobs", "create", "clicks")
    line = tg.fails(2, "jobs", "create", "bad name!")
    assert line.startswith("error: Invalid request: name: String should match pattern")
    line = tg.fails(2, "jobs", "create", "x", "--min-backoff", "2h", "--max-backoff", "1h")
    assert "restart_policy" in line and "min_backoff must not be greater" in line
    # If-Match: the job moved on since revision 1 -> 412 -> conflict
    tg.ok("jobs", "edit", "clicks", "--description", "v2")
    line = tg.fails(3, "jobs", "edit", "clicks", "--description", "v3", "--if-match", "1")
    assert line.startswith("error: Precondition failed:")
    assert "nothing to change" in tg.fails(2, "jobs", "edit", "clicks")


def test_versions_from_yaml_json_and_stdin(tg: Cli, job: str, version_file: Path) -> None:
    body = yaml.safe_load(version_file.read_text())
    as_json = version_file.with_suffix(".json")
    as_json.write_text(json.dumps({**body, "description": "from json"}))
    created = tg.json("versions", "create", "clicks", "-f", str(as_json))
    assert created["number"] == 2 and created["description"] == "from json"
    piped = tg(
        "versions", "create", "clicks", "-f", "-", "-o", "json", input=version_file.read_text()
    )
    assert piped.exit_code == 0, piped.output
    assert json.loads(piped.stdout)["number"] == 3

    assert [v["number"] for v in tg.json("versions", "list", "clicks")] == [3, 2, 1]
    shown = tg.ok("versions", "show", "clicks", "1").stdout
    assert "windowed_counts" in shown and "clicks:eventlog" in shown and "tumbling_window" in shown
    assert tg.yaml("versions", "show", "clicks", "2")["queries"][0]["trigger"] == "15 SECONDS"
    assert tg.json("versions", "list", "clicks", "--limit", "1") == [
        tg.json("versions", "show", "clicks", "3")
    ]


def test_version_errors(tg: Cli, job: str, tmp_path: Path) -> None:
    tg.fails(4, "versions", "show", "clicks", "99")
    tg.fails(4, "versions", "list", "nope")
    missing = tg.fails(2, "versions", "create", "clicks", "-f", str(tmp_path / "nope.yaml"))
    assert "cannot read" in missing and "No such file" in missing
    bad = tmp_path / "bad.yaml"
    bad.write_text("app: [unclosed\n")
    assert "is not valid YAML or JSON" in tg.fails(
        2, "versions", "create", "clicks", "-f", str(bad)
    )
    bad.write_text("- a list\n")
    assert "must hold a version" in tg.fails(2, "versions", "create", "clicks", "-f", str(bad))
    bad.write_text("app: {file: /x.py}\ncluster: local\n")
    line = tg.fails(2, "versions", "create", "clicks", "-f", str(bad))
    assert line == "error: Invalid request: queries: Field required"
    bad.write_text(
        "app: {file: /x.py}\ncluster: nowhere\nqueries: [{sources: [{name: a, kind: file}]}]\n"
    )
    line = tg.fails(2, "versions", "create", "clicks", "-f", str(bad))
    assert "nowhere" in line and "(cluster: unknown cluster)" in line


def test_clusters(tg: Cli, job: str) -> None:
    tg.ok(
        "clusters",
        "create",
        "emr",
        "--kind",
        "livy",
        "--cluster-url",
        "http://127.0.0.1:9",
        "--username",
        "svc",
        "--password",
        "secret",
    )
    listed = {c["name"]: c for c in tg.json("clusters", "list")}
    assert set(listed) == {"local", "emr"} and listed["emr"]["has_credentials"] is True
    assert "secret" not in tg.ok("clusters", "show", "emr", "-o", "yaml").stdout
    shown = tg.json("clusters", "show", "local")
    assert shown["reachable"] is False and shown["reachability_error"]
    assert "REACHABLE" in tg.ok("clusters", "show", "local").stdout

    assert "Conflict" in tg.fails(
        3, "clusters", "create", "emr", "--kind", "livy", "--cluster-url", "http://x:1"
    )
    line = tg.fails(
        2, "clusters", "create", "sa", "--kind", "standalone", "--cluster-url", "http://x:6066"
    )
    assert "master_url" in line
    tg.fails(3, "clusters", "delete", "local", "--yes")  # the job's version targets it
    tg.ok("clusters", "delete", "emr", "--yes")
    tg.fails(4, "clusters", "show", "emr")


def test_events_lists_the_audit_trail(tg: Cli, job: str) -> None:
    """'tidegate events' (bare or with options) is the audit list; 'events produce' stays."""
    tg.ok("jobs", "edit", "clicks", "--description", "audited")
    bare = tg.json("events")
    assert bare == tg.json("events", "list")
    actions = [e["action"] for e in tg.json("events", "--job", "clicks")]
    assert "job.update" in actions and "job.create" in actions, actions
    assert tg.json("events", "--job", "clicks", "--action", "job.create")[0]["action"] == (
        "job.create"
    )
    assert tg.json("events", "--job", "nope") == []
    assert "produce" in tg.ok("events", "--help").stdout
