"""One rule for what is secret, used by every response model and by the logs.

A key that looks like it names a secret (``fs.s3a.secret.key``, ``kafka.sasl.jaas.config``,
``spark.hadoop.fs.s3a.access.key``, ``password``, ``credentials``, ``connectionString``,
``es.net.http.auth.pass``, ``spark.redis.auth``…) has its value replaced, at any depth. In
every string, values are masked by their shape as well: a URL's ``user:password@``, and the
value of any ``name=value`` pair whose name looks secret (``?password=…``, ``;password=…`` in
a JDBC URL, Azure SAS ``sig=…``, ``AccountKey=…``/``SharedAccessKey=…`` in a connection
string). In a list (a job's ``args``), the item after a secret-looking flag (``--password
x``) is masked. What is stored is untouched: a driver still gets its real conf and args.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableMapping
from typing import Any

REDACTED = "***redacted***"
_SECRET_NAME = (
    r"secret|passw(or)?d|passphrase|pwd|token|credential|jaas|sasl|authorization|signature|"
    r"(access|account|private|api|session|encryption|shared[._-]?access)[._-]?key|keystore|"
    r"truststore|connection[._-]?string"
)
SECRET_KEY = re.compile(
    rf"(?i){_SECRET_NAME}|(^|[._-])(pass|sig|sas)($|[._-])|(^|[._-])auth$"  # …auth.pass, redis.auth
)
# name=value where the name looks secret (URL queries, JDBC URLs, connection strings), also
# quoted (password="…", '…') and as a JSON or YAML pair ("password": "…") (issue 51 L4).
_SECRET_PAIR = re.compile(
    rf"(?i)(\b[\w.-]*(?:{_SECRET_NAME}|\bpass|\bsig|\bauth)[\"']?\s*[=:]\s*)"
    r"(\"[^\"]*\"|'[^']*'|[^&;\s,'\"]+)"
)
# A JAAS config in free text holds its secrets up to the closing ';'.
_JAAS = re.compile(r"(?i)(\bjaas\.config[\"']?\s*[=:]\s*)[^;\n]*;?")
# user/password@ (Oracle's thin JDBC URL), and an HTTP bearer token in text.
_ORACLE = re.compile(r"(?i)(jdbc:oracle:\w+:)[^@\s]*@")
_BEARER = re.compile(r"(?i)(\bbearer\s+)[^\s\"',;]+")
# scheme://user:password@host or scheme://user@host (a token as the user name).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s?#]+@")


def is_secret_key(key: object) -> bool:
    return isinstance(key, str) and bool(SECRET_KEY.search(key))


def redact_text(text: str) -> str:
    """``text`` with the credentials of any URL in it and secret-looking ``name=value``
    values masked."""
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    text = _ORACLE.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{REDACTED}", text)
    text = _JAAS.sub(lambda m: f"{m.group(1)}{REDACTED}", text)
    return _SECRET_PAIR.sub(lambda m: f"{m.group(1)}{REDACTED}", text)


def redact(value: Any) -> Any:
    """A copy of ``value`` (JSON-like) fit to show: secret-looking keys' values replaced,
    URL credentials masked in every string."""
    if isinstance(value, dict):
        return {k: REDACTED if is_secret_key(k) else redact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        # The item after a secret-looking flag is its value: --password x, -Dtoken y.
        return [
            REDACTED if i and _is_secret_flag(value[i - 1]) else redact(v)
            for i, v in enumerate(value)
        ]
    if isinstance(value, str):
        return redact_text(value)
    return value


def _is_secret_flag(item: object) -> bool:
    return (
        isinstance(item, str) and item.startswith("-") and "=" not in item and is_secret_key(item)
    )


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
