"""What a backend declares about itself, as data: its cluster kind, how it is built from a
cluster row, which of the cluster's fields it needs, what it can do, and what the drivers it
starts must reach. One ``BackendSpec`` per backend module (``SPEC``); ``registry.py`` keys
them by kind. docs/backends.md says how to add one.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.backends.base import Backend

# The cluster's fields a kind may use beyond ``url`` (which every kind needs): the nullable
# columns of ``clusters``. A backend needing another field adds a column (and a migration).
CLUSTER_FIELDS = ("master_url", "ui_url")


class ClusterAddress(Protocol):
    """What a backend needs to know of a cluster (``app.clusters.models.Cluster`` has it)."""

    kind: Any
    url: Any
    master_url: Any
    ui_url: Any
    credentials: Any


class Capability(enum.StrEnum):
    """What the worker may ask of a backend (the methods of ``app.backends.base.Backend``)."""

    SUBMIT = "submit"  # start an application under a tag
    STATUS = "status"  # one application's state, with the failure message when it failed
    LIST = "list"  # every application's state in one call (the reconciler's sweep)
    FIND = "find"  # the application submitted under a tag (a resumed worker finds its own)
    KILL = "kill"  # end an application, idempotently
    LOG_TAIL = "log_tail"  # the end of the driver's log


# A run's driver, a standby (the new run's driver, waiting for go) and a hot spare are all
# plain submissions told apart by their conf: a backend that can do these runs all three.
RUNS_SPARES = frozenset({Capability.SUBMIT, Capability.STATUS, Capability.FIND, Capability.KILL})


class SharedStorage(enum.StrEnum):
    """What a driver started by the backend must read at the same path as the worker."""

    # TIDEGATE_RUNTIME_BUNDLE_DIR: the tidegate_runtime zip, first among every driver's py-files.
    RUNTIME_BUNDLE = "runtime_bundle"
    # TIDEGATE_CHECKPOINT_ROOT: the driver writes its queries' checkpoints there; the worker
    # and the API read them (snapshots, startpoints, updates). docs/deploy.md.
    CHECKPOINTS = "checkpoints"


@dataclass(frozen=True)
class FieldUse:
    """How a kind uses one of ``CLUSTER_FIELDS``."""

    required: bool
    help: str  # what it is, for the 422 that asks for it


Factory = Callable[..., Backend]  # (cluster, *, authorization: str | None, timeout: float)


@dataclass(frozen=True)
class BackendSpec:
    kind: str
    summary: str  # one line: what the backend talks to
    build: Factory  # the backend for one cluster row
    url_help: str  # what the cluster's ``url`` is for this kind
    fields: Mapping[str, FieldUse] = field(default_factory=dict)
    capabilities: frozenset[Capability] = frozenset(Capability)
    shared_storage: frozenset[SharedStorage] = frozenset(SharedStorage)

    def __post_init__(self) -> None:
        unknown = set(self.fields) - set(CLUSTER_FIELDS)
        if unknown:
            raise ValueError(
                f"backend '{self.kind}' names cluster fields that do not exist: "
                f"{', '.join(sorted(unknown))} (the cluster has {', '.join(CLUSTER_FIELDS)})"
            )

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(name for name, use in self.fields.items() if use.required)

    @property
    def runs_spares(self) -> bool:
        """Whether standbys and hot spares can run on it (they are plain submissions)."""
        return self.capabilities >= RUNS_SPARES

    def can(self, capability: Capability) -> bool:
        return capability in self.capabilities
