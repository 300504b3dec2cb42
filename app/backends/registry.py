"""The backend that speaks to a cluster, by the cluster's kind."""

from __future__ import annotations

import base64
from typing import Any, Protocol

import httpx

from app.backends.base import Backend
from app.backends.livy import LivyBackend
from app.backends.standalone import StandaloneBackend


class ClusterAddress(Protocol):
    """What a backend needs to know of a cluster (``app.clusters.models.Cluster`` has it)."""

    kind: Any
    url: Any
    master_url: Any
    ui_url: Any
    credentials: Any


def backend_for(cluster: ClusterAddress, *, timeout: float = 10.0) -> Backend:
    """The cluster's credentials go only to the URLs it was registered with: a standalone
    master reports its workers' UI addresses, and those may be anyone's (the backend sends
    its credentials to the REST and UI origins alone)."""
    creds = cluster.credentials or {}
    if creds.get("authorization"):
        authorization: str | None = str(creds["authorization"])
    elif creds.get("username"):
        pair = f"{creds['username']}:{creds.get('password', '')}".encode()
        authorization = "Basic " + base64.b64encode(pair).decode()
    else:
        authorization = None
    if cluster.kind == "standalone":
        assert cluster.master_url is not None
        standalone: Backend = StandaloneBackend(
            cluster.url,
            cluster.master_url,
            ui_url=cluster.ui_url,
            http_client=httpx.Client(timeout=timeout),
            auth_header=authorization,
        )
        return standalone
    # Livy is only ever called at its own URL (relative paths on it).
    headers = {"Authorization": authorization} if authorization else {}
    livy: Backend = LivyBackend(
        cluster.url, http_client=httpx.Client(timeout=timeout, headers=headers)
    )
    return livy
