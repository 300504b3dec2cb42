"""The registry of backends by cluster kind: each kind's spec builds its backend, declares
its capabilities and shared-storage needs, and says which cluster fields it needs; an unknown
kind is an error, never a Livy client. No Spark, no network."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import pytest

from app.backends import livy, registry, standalone
from app.backends.base import Backend, PermanentBackendError
from app.backends.livy import LivyBackend
from app.backends.registry import BACKENDS, UnknownKind, backend_for, field_problems, spec_for
from app.backends.spec import (
    CLUSTER_FIELDS,
    RUNS_SPARES,
    BackendSpec,
    Capability,
    FieldUse,
    SharedStorage,
)
from app.backends.standalone import StandaloneBackend


@dataclass
class _Cluster:
    kind: Any
    url: str = "http://h:6066"
    master_url: str | None = None
    ui_url: str | None = None
    credentials: dict[str, str] | None = None


def test_the_registry_is_keyed_by_each_spec_s_own_kind() -> None:
    assert list(BACKENDS) == ["standalone", "livy"]
    assert BACKENDS["standalone"] is standalone.SPEC
    assert BACKENDS["livy"] is livy.SPEC
    assert all(kind == spec.kind for kind, spec in BACKENDS.items())
    assert registry.KINDS == ("standalone", "livy")


@pytest.mark.parametrize("kind", ["yarn", "k8s", "", None, "Livy"])
def test_an_unknown_kind_is_an_error_not_livy(kind: Any) -> None:
    with pytest.raises(UnknownKind) as caught:
        backend_for(_Cluster(kind=kind))
    assert isinstance(caught.value, PermanentBackendError)  # the worker fails, never retries
    assert f"'{kind}'" in str(caught.value) and "standalone, livy" in str(caught.value)
    assert "docs/backends.md" in str(caught.value)
    with pytest.raises(UnknownKind):
        spec_for(kind)


def test_each_kind_builds_its_own_backend() -> None:
    built = backend_for(_Cluster("standalone", master_url="spark://h:7077", ui_url="http://h:1"))
    assert isinstance(built, StandaloneBackend)
    assert (built.rest_url, built.master_url, built.ui_url) == (
        "http://h:6066",
        "spark://h:7077",
        "http://h:1",
    )
    livy_backend = backend_for(_Cluster("livy", url="http://livy:8998"))
    assert isinstance(livy_backend, LivyBackend) and livy_backend.url == "http://livy:8998"


def test_a_standalone_row_without_master_url_is_refused_by_its_factory() -> None:
    with pytest.raises(PermanentBackendError, match="master_url"):
        backend_for(_Cluster("standalone"))


@pytest.mark.parametrize(
    ("credentials", "expected"),
    [
        (None, None),
        ({"authorization": "Bearer t"}, "Bearer t"),
        ({"username": "u", "password": "p"}, "Basic dTpw"),
        ({"username": "u"}, "Basic dTo="),
    ],
)
def test_credentials_become_one_authorization_value(
    credentials: dict[str, str] | None, expected: str | None
) -> None:
    assert registry.authorization(credentials) == expected
    livy_backend = backend_for(_Cluster("livy", credentials=credentials))
    assert isinstance(livy_backend, LivyBackend)
    assert livy_backend._client.headers.get("Authorization") == expected


@pytest.mark.parametrize("spec", list(BACKENDS.values()), ids=list(BACKENDS))
def test_each_spec_declares_what_its_backend_can_do(spec: BackendSpec) -> None:
    # Both backends today do everything the worker asks, standbys and spares included, and
    # both need the runtime zip and the checkpoints at the worker's paths (docs/deploy.md).
    assert spec.capabilities == frozenset(Capability)
    assert spec.runs_spares and all(spec.can(c) for c in RUNS_SPARES)
    assert spec.shared_storage == {SharedStorage.RUNTIME_BUNDLE, SharedStorage.CHECKPOINTS}
    assert spec.summary and spec.url_help
    # The factory takes a cluster row, the Authorization value and a timeout.
    assert list(inspect.signature(spec.build).parameters) == [
        "cluster",
        "authorization",
        "timeout",
    ]


@pytest.mark.parametrize("spec", list(BACKENDS.values()), ids=list(BACKENDS))
def test_a_declared_capability_is_a_method_of_the_backend_built(spec: BackendSpec) -> None:
    cluster = _Cluster(spec.kind, **{name: "spark://h:7077" for name in spec.required})
    backend = spec.build(cluster, authorization=None, timeout=1.0)
    protocol = {n for n in vars(Backend) if not n.startswith("_")}
    for capability in spec.capabilities:
        name = "statuses" if capability is Capability.LIST else capability.value
        assert name in protocol, f"{capability} names no method of the Backend protocol"
        assert callable(getattr(backend, name, None)), f"{spec.kind} declares {capability}"


def test_the_fields_each_kind_needs() -> None:
    assert standalone.SPEC.required == ("master_url",)
    assert set(standalone.SPEC.fields) == {"master_url", "ui_url"}
    assert livy.SPEC.required == () and dict(livy.SPEC.fields) == {}


@pytest.mark.parametrize(
    ("kind", "fields", "wrong"),
    [
        ("standalone", {"master_url": "spark://h:7077"}, []),
        ("standalone", {"master_url": "spark://h:7077", "ui_url": "http://h:8080"}, []),
        ("standalone", {}, ["master_url"]),
        ("standalone", {"master_url": ""}, ["master_url"]),
        ("livy", {}, []),
        ("livy", {"master_url": "spark://h:7077"}, ["master_url"]),
        (
            "livy",
            {"master_url": "spark://h:7077", "ui_url": "http://h:1"},
            ["master_url", "ui_url"],
        ),
        ("yarn", {}, ["kind"]),
    ],
)
def test_field_problems_follow_the_spec(
    kind: str, fields: dict[str, str], wrong: list[str]
) -> None:
    problems = field_problems(kind, fields)
    assert [p["field"] for p in problems] == wrong
    assert all(p["message"] for p in problems)


def test_the_messages_say_what_to_give_and_where_a_field_applies() -> None:
    (missing,) = field_problems("standalone", {})
    assert missing["message"].startswith("a standalone cluster needs master_url: spark://")
    (stray,) = field_problems("livy", {"ui_url": "http://h:1"})
    assert stray["message"] == (
        "ui_url does not apply to a livy cluster: it applies to standalone clusters"
    )


def test_the_check_reads_the_spec_not_the_kind_s_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new backend's spec alone decides what its registration needs."""
    spec = BackendSpec(
        kind="k8s",
        summary="a test backend",
        build=livy.from_cluster,
        url_help="an API server",
        fields={"ui_url": FieldUse(required=True, help="the driver UI proxy")},
        capabilities=frozenset({Capability.SUBMIT, Capability.KILL}),
    )
    monkeypatch.setitem(BACKENDS, "k8s", spec)
    assert [p["field"] for p in field_problems("k8s", {})] == ["ui_url"]
    assert field_problems("k8s", {"ui_url": "http://h:1"}) == []
    assert [p["field"] for p in field_problems("k8s", {"master_url": "spark://h:1"})] == [
        "master_url",
        "ui_url",
    ]
    assert not spec.runs_spares and not spec.can(Capability.LOG_TAIL)
    assert spec_for("k8s") is spec


def test_a_spec_naming_a_field_the_cluster_lacks_fails_at_import() -> None:
    with pytest.raises(ValueError, match="namespace"):
        BackendSpec(
            kind="k8s",
            summary="x",
            build=livy.from_cluster,
            url_help="x",
            fields={"namespace": FieldUse(required=True, help="x")},
        )
    assert CLUSTER_FIELDS == ("master_url", "ui_url")
