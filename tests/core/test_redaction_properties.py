"""Redaction by shape, property-based (issue 26, #3): a value shaped like a credential is
masked wherever it sits in a string, a URL or an argument list."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from app.core.redaction import redact

NAMES = st.sampled_from(
    [
        "password",
        "pwd",
        "PassWord",
        "sig",
        "AccountKey",
        "SharedAccessKey",
        "token",
        "api_key",
        "client_secret",
        "access_token",
        "passphrase",
    ]
)
VALUES = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789%+/_-", min_size=8
).filter(lambda v: not v.startswith("-"))
SEPARATORS = st.sampled_from(["?", "&", ";", " ", "/"])


@settings(max_examples=300, deadline=None)
@given(NAMES, VALUES, SEPARATORS, st.sampled_from(["", "&next=1", ";x=y", " tail"]))
def test_a_secret_pair_is_masked_in_any_string(
    name: str, value: str, before: str, after: str
) -> None:
    text = f"scheme://host/path{before}{name}={value}{after}"
    assume(text.count(value) == 1)  # a value that is also its name ("password") shows as name
    assert value not in redact(text), text


@settings(max_examples=200, deadline=None)
@given(NAMES, VALUES)
def test_the_value_after_a_secret_flag_is_masked(name: str, value: str) -> None:
    args = ["--verbose", f"--{name}", value, "--out", "/tmp/x"]
    assume(" ".join(args).count(value) == 1)
    shown = redact(args)
    assert value not in shown and shown[-2:] == ["--out", "/tmp/x"]


SHAPES = st.sampled_from(
    [
        'conf password="{v}" next',
        "conf password='{v}' next",
        '{{"password": "{v}", "user": "u"}}',
        "password: {v}",
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="u" password="{v}"; next',
        "jdbc:oracle:thin:scott/{v}@db:1521/orcl",
        "Authorization: Bearer {v}",
        "failed with bearer {v} at host",
    ]
)


@settings(max_examples=300, deadline=None)
@given(SHAPES, VALUES)
def test_issue_51_l4_the_five_forms_are_masked(shape: str, value: str) -> None:
    """Quoted values, JSON pairs, a JAAS config in free text, Oracle's user/pass@ and a
    bearer token in text: the secret is gone, wherever it sat."""
    text = shape.format(v=value)
    assume(text.count(value) == 1)  # "password" as the password is still there as the key
    assert value not in redact(text), (text, redact(text))
