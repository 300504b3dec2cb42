"""What /metrics serves: the process's HTTP metrics and, per app, the store's figures."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from sqlalchemy.orm import Session, sessionmaker

from app.metrics.collector import StoreCollector


def store_registry(factory: sessionmaker[Session]) -> CollectorRegistry:
    """A registry of the app's own: several apps (tests) may live in one process, and the
    default registry holds each collector once."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(factory))
    return registry


def exposition(store: CollectorRegistry) -> bytes:
    return generate_latest(REGISTRY) + generate_latest(store)
