"""PSTL's supervised restart: delay(n) = min(max, min·2^n)·(1 + U[0,1)·random_factor)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from app.core.durations import parse_duration
from tidegate_runtime import contract


@dataclass(frozen=True)
class RestartPolicy:
    enabled: bool = True
    min_backoff: timedelta = timedelta(seconds=1)
    max_backoff: timedelta = timedelta(hours=1)
    random_factor: float = 0.0
    max_attempts: int | None = None
    stable_period: timedelta = timedelta(minutes=1)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RestartPolicy:
        return cls(
            enabled=data.get("enabled", True),
            min_backoff=parse_duration(data.get("min_backoff", "1s")),
            max_backoff=parse_duration(data.get("max_backoff", "1h")),
            random_factor=float(data.get("random_factor", 0.0)),
            max_attempts=data.get("max_attempts"),
            stable_period=parse_duration(data.get("stable_period", "1m")),
        )

    def delay(self, failures: int, rng: random.Random | None = None) -> timedelta:
        """``failures`` is n: failures since the run last stayed healthy (0 for the first)."""
        return timedelta(
            seconds=contract.backoff_seconds(
                self.min_backoff.total_seconds(),
                self.max_backoff.total_seconds(),
                self.random_factor,
                failures,
                rng,
            )
        )

    def may_restart(self, failures: int) -> bool:
        """After its ``failures``-th failure in a row, may the run be restarted again?"""
        return self.enabled and (self.max_attempts is None or failures <= self.max_attempts)
