"""The backend that speaks to a cluster, by the cluster's kind."""

from __future__ import annotations

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
    creds = cluster.credentials or {}
    headers = {"Authorization": creds["authorization"]} if creds.get("authorization") else {}
    auth = (creds["username"], creds.get("password", "")) if creds.get("username") else None
    client = httpx.Client(timeout=timeout, headers=headers, auth=auth)
    if cluster.kind == "standalone":
        assert cluster.master_url is not None
        standalone: Backend = StandaloneBackend(
            cluster.url, cluster.master_url, ui_url=cluster.ui_url, http_client=client
        )
        return standalone
    livy: Backend = LivyBackend(cluster.url, http_client=client)
    return livy
