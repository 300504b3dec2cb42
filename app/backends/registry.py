"""The backends by cluster kind: each backend module's ``SPEC``, one line each.

Adding a backend is its module (the ``Backend`` protocol of ``base.py`` and a ``SPEC``), its
line in ``BACKENDS`` and its tests: docs/backends.md.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from app.backends import livy, standalone
from app.backends.base import Backend, PermanentBackendError
from app.backends.spec import CLUSTER_FIELDS, BackendSpec, ClusterAddress

__all__ = ["BACKENDS", "KINDS", "ClusterAddress", "UnknownKind", "backend_for", "spec_for"]

BACKENDS: dict[str, BackendSpec] = {spec.kind: spec for spec in (standalone.SPEC, livy.SPEC)}
KINDS = tuple(BACKENDS)


class UnknownKind(PermanentBackendError):
    """A cluster kind no backend is registered for (a row written by a newer tidegate, or a
    typo in a registration)."""

    def __init__(self, kind: object) -> None:
        super().__init__(
            f"no backend for cluster kind '{kind}': tidegate has {', '.join(BACKENDS)} "
            "(docs/backends.md says how to add one)"
        )
        self.kind = kind


def spec_for(kind: str) -> BackendSpec:
    try:
        return BACKENDS[kind]
    except (KeyError, TypeError):
        raise UnknownKind(kind) from None


def backend_for(cluster: ClusterAddress, *, timeout: float = 10.0) -> Backend:
    """The backend for a cluster row, built by its kind's spec with the cluster's
    credentials as one Authorization value."""
    spec = spec_for(cluster.kind)
    return spec.build(cluster, authorization=authorization(cluster.credentials), timeout=timeout)


def authorization(credentials: Mapping[str, Any] | None) -> str | None:
    """A cluster's credentials as an Authorization header value (basic auth from a pair)."""
    creds = credentials or {}
    if creds.get("authorization"):
        return str(creds["authorization"])
    if creds.get("username"):
        pair = f"{creds['username']}:{creds.get('password', '')}".encode()
        return "Basic " + base64.b64encode(pair).decode()
    return None


def field_problems(kind: str, fields: Mapping[str, Any]) -> list[dict[str, str]]:
    """What is wrong with a cluster registration for its kind's spec, one ``{field,
    message}`` each: a kind without a backend, a field the kind needs and lacks, a field the
    kind does not use. Empty when it is fine."""
    spec = BACKENDS.get(kind)
    if spec is None:
        return [{"field": "kind", "message": str(UnknownKind(kind))}]
    problems = []
    for name in CLUSTER_FIELDS:
        use = spec.fields.get(name)
        given = fields.get(name) not in (None, "")
        if use is not None and use.required and not given:
            problems.append(
                {"field": name, "message": f"a {kind} cluster needs {name}: {use.help}"}
            )
        elif use is None and given:
            users = [k for k, s in BACKENDS.items() if name in s.fields]
            applies = f"it applies to {', '.join(users)} clusters" if users else "no kind uses it"
            problems.append(
                {"field": name, "message": f"{name} does not apply to a {kind} cluster: {applies}"}
            )
    return problems
