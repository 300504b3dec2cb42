"""The preview's view of a Kafka source's brokers. The API connects to a broker only when an
admin listed it (``TIDEGATE_KAFKA_PREVIEW_BROKERS``): a version's author names any address,
and the API must not become a way to reach it. Options that name key or trust store files are
never previewed here either: nothing a client sends names a file the API reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tidegate_runtime.sources.kafka_client import ClientResolver

# The preview answers within a request: a broker that does not answer soon is said to.
TIMEOUT_SECONDS = 5.0


def servers(options: Mapping[str, Any]) -> list[str]:
    text = str(options.get("kafka.bootstrap.servers") or "")
    return [s.strip().lower() for s in text.split(",") if s.strip()]


def resolver_for(
    options: Mapping[str, Any], allowed: frozenset[str]
) -> tuple[ClientResolver | None, str]:
    """A resolver over the source's brokers, or None and why the API may not ask them (said
    where a startpoint needs the brokers: OFFSET and OLDEST preview without them)."""
    named = servers(options)
    unlisted = [s for s in named if s not in allowed]
    if not named or unlisted:
        return None, (
            "the API asks a Kafka source's brokers (to preview UPCOMING, TIMESTAMP and "
            "source-wide startpoints) only when an admin lists every one in "
            f"TIDEGATE_KAFKA_PREVIEW_BROKERS; {', '.join(unlisted) or 'none'} "
            f"{'is' if len(unlisted) == 1 else 'are'} not listed. The driver resolves them "
            "against the brokers when the query starts; OFFSET and per-partition OLDEST "
            "startpoints preview without them"
        )
    files = sorted(key for key in options if key.endswith(".location"))
    if files:
        return None, (
            f"the source names key or trust store files ({', '.join(files)}), which the API "
            "does not read; the driver resolves its startpoints when the query starts"
        )
    return ClientResolver(options, timeout_s=TIMEOUT_SECONDS), ""
