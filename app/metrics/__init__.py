"""What /metrics serves: the process's HTTP metrics and, per app, the store's figures."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.utils import floatToGoString
from sqlalchemy.orm import Session, sessionmaker

from app.metrics.collector import StoreCollector


def store_registry(factory: sessionmaker[Session]) -> CollectorRegistry:
    """A registry of the app's own: several apps (tests) may live in one process, and the
    default registry holds each collector once."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(factory))
    return registry


def _escape(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return value


def render(families: Iterable[Metric]) -> bytes:
    """The Prometheus text format of ``families``. prometheus_client's generate_latest checks
    and escapes every metric and label name of every sample, which is most of a scrape with
    1,000 jobs (~26 series each, bench/metrics.py); these names are our own constants, so
    only label values are escaped here."""
    out: list[str] = []
    for family in families:
        name = family.name + ("_total" if family.type == "counter" else "")
        doc = family.documentation.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {name} {doc}\n# TYPE {name} {family.type}\n")
        for s in family.samples:
            value = floatToGoString(s.value)  # type: ignore[no-untyped-call]
            if s.labels:
                labels = ",".join(f'{k}="{_escape(v)}"' for k, v in s.labels.items())
                out.append(f"{s.name}{{{labels}}} {value}\n")
            else:
                out.append(f"{s.name} {value}\n")
    return "".join(out).encode()


def exposition(store: CollectorRegistry) -> bytes:
    return generate_latest(REGISTRY) + render(store.collect())
