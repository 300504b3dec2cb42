"""Read scope sees no secrets: secret-looking conf keys and source options are redacted in
every response, cluster URLs may not carry credentials, and the logs follow the same rule."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from app.core.logging_setup import configure_logging
from app.core.redaction import REDACTED, redact
from tests.support.api import version_body

SECRETS = {
    "spark.hadoop.fs.s3a.access.key": "AKIA-access-key-value",
    "spark.hadoop.fs.s3a.secret.key": "s3-secret-value",
    "spark.kafka.sasl.jaas.config": "jaas-config-value",
    "spark.hadoop.google.cloud.auth.service.account.json.keyfile.credential": "gcs-cred-value",
    "spark.hadoop.fs.azure.account.key.acct.blob.core.windows.net": "azure-key-value",
    "spark.ssl.keyStorePassword": "keystore-pass-value",
}
PLAIN = {"spark.sql.shuffle.partitions": "2", "spark.executor.memory": "1g"}
OPTIONS = {
    "stream": "s",
    "kafka.sasl.jaas.config": "jaas-option-value",
    "kafka.ssl.truststore.password": "truststore-option-value",
    "url": "jdbc:postgresql://dbuser:db-url-password@db:6543/x",
}


def test_versions_show_secret_conf_and_options_redacted(
    client: TestClient, cluster: str, token_for: Callable[[str], str]
) -> None:
    assert client.post("/api/v1/jobs", json={"name": "j"}).status_code == 201
    body = version_body(conf={**SECRETS, **PLAIN})
    body["queries"][0]["sources"][0]["options"] = OPTIONS  # type: ignore[index]
    created = client.post("/api/v1/jobs/j/versions", json=body)
    assert created.status_code == 201, created.text
    read = {"Authorization": f"Bearer {token_for('read')}"}
    answers = [
        created,
        client.get("/api/v1/jobs/j/versions/1", headers=read),
        client.get("/api/v1/jobs/j/versions", headers=read),
    ]
    for answer in answers:
        assert answer.status_code == 200 or answer.status_code == 201, answer.text
        for value in [*SECRETS.values(), "jaas-option-value", "truststore-option-value"]:
            assert value not in answer.text, value
        assert "db-url-password" not in answer.text
    version = answers[1].json()
    assert all(version["conf"][k] == REDACTED for k in SECRETS)
    assert {k: version["conf"][k] for k in PLAIN} == PLAIN  # the rest as given
    options = version["queries"][0]["sources"][0]["options"]
    assert options["stream"] == "s" and options["kafka.sasl.jaas.config"] == REDACTED
    assert options["url"] == f"jdbc:postgresql://{REDACTED}@db:6543/x"


@pytest.mark.parametrize(
    "url", ["http://admin:hunter2@livy:8998", "https://tok3n@livy.example/api", "http://u:p@h"]
)
def test_cluster_urls_with_credentials_are_refused(client: TestClient, url: str) -> None:
    r = client.post("/api/v1/clusters", json={"name": "c", "kind": "livy", "url": url})
    assert r.status_code == 422
    assert "credentials" in r.text
    assert "hunter2" not in r.text and "tok3n" not in r.text
    assert client.get("/api/v1/clusters/c").status_code == 404


def test_logs_redact_secret_keys_and_url_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        configure_logging("INFO", json=True)
        logging.getLogger("tidegate.test").info(
            "submitting to %s",
            "http://svc:log-url-password@livy:8998",
            extra={"password": "log-field-secret", "conf": {"fs.s3a.secret.key": "log-conf"}},
        )
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    out = stream.getvalue()
    assert "submitting to" in out
    for secret in ("log-url-password", "log-field-secret", "log-conf"):
        assert secret not in out, out
    line = json.loads(out.strip().splitlines()[-1])
    assert line["event"] == f"submitting to http://{REDACTED}@livy:8998"


def test_one_rule_for_secret_keys() -> None:
    shown = redact(
        {
            "access.key": "a",
            "secret": "b",
            "JAAS": "c",
            "credentials": "d",
            "nested": [{"token": "e"}],
            "key_schema": "k STRING",
            "partitions": 4,
        }
    )
    assert shown == {
        "access.key": REDACTED,
        "secret": REDACTED,
        "JAAS": REDACTED,
        "credentials": REDACTED,
        "nested": [{"token": REDACTED}],
        "key_schema": "k STRING",
        "partitions": 4,
    }


# Issue 26, #3: secrets a read token saw because their key was not on the list, or because
# they were in args or inside a value.
SHAPED = {
    "spark.eventhubs.connectionString": "Endpoint=sb://ns/;SharedAccessKey=eh-key-value",
    "es.net.http.auth.pass": "es-pass-value",
    "spark.redis.auth": "redis-auth-value",
    "spark.ssl.key.passphrase": "passphrase-value",
    "spark.sql.catalog.jdbc.url": "jdbc:postgresql://db/x?user=a&password=jdbc-query-value",
    "spark.hadoop.fs.azure.sas.fixed.token": "sv=2020&sig=azure-sig-value",
    "spark.mine.storage": "AccountName=acct;AccountKey=account-key-value;Suffix=x",
}
HIDDEN = [
    "eh-key-value",
    "es-pass-value",
    "redis-auth-value",
    "passphrase-value",
    "jdbc-query-value",
    "azure-sig-value",
    "account-key-value",
    "arg-password-value",
    "arg-jdbc-value",
    "arg-sig-value",
]
ARGS = [
    "--user",
    "bob",
    "--password",
    "arg-password-value",
    "--jdbc",
    "jdbc:sqlserver://db;databaseName=x;password=arg-jdbc-value",
    "--sink=https://acct.blob.core.windows.net/c?sv=2020&sig=arg-sig-value",
]


def test_secrets_are_redacted_by_their_shape_and_in_args(
    client: TestClient, cluster: str, token_for: Callable[[str], str]
) -> None:
    assert client.post("/api/v1/jobs", json={"name": "j"}).status_code == 201
    body = version_body(conf={**SHAPED, **PLAIN})
    body["app"] = {"file": "/opt/app.py", "args": ARGS}
    r = client.post("/api/v1/jobs/j/versions", json=body)
    assert r.status_code == 201, r.text
    reader = {"Authorization": f"Bearer {token_for('read')}"}
    for url in ("/api/v1/jobs/j/versions", "/api/v1/jobs/j/versions/1"):
        shown = client.get(url, headers=reader)
        assert shown.status_code == 200
        for secret in HIDDEN:
            assert secret not in shown.text, (url, secret)
        assert "bob" in shown.text and "partitions" in shown.text  # the rest is shown


def test_redaction_by_shape_keeps_what_is_not_secret() -> None:
    assert redact(["--partitions", "4", "--output", "s3a://bucket/out"]) == [
        "--partitions",
        "4",
        "--output",
        "s3a://bucket/out",
    ]
    assert redact({"es.net.http.auth.user": "u", "author": "a"}) == {
        "es.net.http.auth.user": "u",
        "author": "a",
    }
    assert redact("jdbc:postgresql://db/x?user=a&ssl=true") == (
        "jdbc:postgresql://db/x?user=a&ssl=true"
    )
