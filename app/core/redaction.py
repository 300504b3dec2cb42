"""One rule for what is secret, used by every response model and by the logs.

A key that looks like it names a secret (``fs.s3a.secret.key``, ``kafka.sasl.jaas.config``,
``spark.hadoop.fs.s3a.access.key``, ``password``, ``credentials``…) has its value replaced,
at any depth; a URL's ``user:password@`` is masked wherever it appears in a string. What is
stored is untouched: a driver still gets its real conf.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableMapping
from typing import Any

REDACTED = "***redacted***"
SECRET_KEY = re.compile(
    r"(?i)secret|passw(or)?d|pwd|token|credential|jaas|sasl|authorization|signature|"
    r"(access|account|private|api|session|encryption)[._-]?key|keystore|truststore"
)
# scheme://user:password@host or scheme://user@host (a token as the user name).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s?#]+@")


def is_secret_key(key: object) -> bool:
    return isinstance(key, str) and bool(SECRET_KEY.search(key))


def redact_text(text: str) -> str:
    """``text`` with the credentials of any URL in it masked."""
    return _USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)


def redact(value: Any) -> Any:
    """A copy of ``value`` (JSON-like) fit to show: secret-looking keys' values replaced,
    URL credentials masked in every string."""
    if isinstance(value, dict):
        return {k: REDACTED if is_secret_key(k) else redact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def has_url_credentials(url: str) -> bool:
    return bool(_USERINFO.search(url))


def redact_log_event(
    _logger: Any, _method: str, event: MutableMapping[str, Any]
) -> Mapping[str, Any]:
    """structlog processor: the same rule for every log line (message and fields)."""
    return {
        key: REDACTED if key != "event" and is_secret_key(key) else redact(value)
        for key, value in event.items()
    }
