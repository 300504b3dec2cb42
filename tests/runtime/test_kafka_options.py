"""Spark's Kafka source options as kafka-python settings
(tidegate_runtime/sources/kafka_client.py)."""

from __future__ import annotations

import pytest

from tidegate_runtime.sources.kafka_client import KafkaClientError, client_config, source_problems

BROKERS = {"kafka.bootstrap.servers": "k1:9092, k2:9093", "subscribe": "clicks"}


def test_plaintext_is_the_default() -> None:
    assert client_config(BROKERS) == {
        "bootstrap_servers": ["k1:9092", "k2:9093"],
        "security_protocol": "PLAINTEXT",
    }
    assert source_problems(BROKERS) == []


def test_sasl_takes_user_and_password_from_the_jaas_config() -> None:
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="svc" password="a \\"quoted\\" secret";'
    )
    config = client_config(
        {
            **BROKERS,
            "kafka.security.protocol": "sasl_ssl",
            "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": jaas,
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": "/etc/kafka/ca.pem",
            "kafka.ssl.endpoint.identification.algorithm": "",
        }
    )
    assert config["security_protocol"] == "SASL_SSL"
    assert config["sasl_mechanism"] == "PLAIN"
    assert config["sasl_plain_username"] == "svc"
    assert config["sasl_plain_password"] == 'a "quoted" secret'
    assert config["ssl_cafile"] == "/etc/kafka/ca.pem" and config["ssl_check_hostname"] is False


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"kafka.security.protocol": "SSLv2"}, "is not one of PLAINTEXT"),
        (
            {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "OAUTHBEARER"},
            "OAUTHBEARER is not one",
        ),
        (
            {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN"},
            'username="…"',
        ),
        (
            {"kafka.security.protocol": "SSL", "kafka.ssl.keystore.location": "/k.jks"},
            "PEM key store",
        ),
    ],
)
def test_what_the_resolver_cannot_use_is_named(options: dict[str, str], needle: str) -> None:
    with pytest.raises(KafkaClientError, match=needle):
        client_config({**BROKERS, **options})
    assert any(needle.strip("\\") in p for p in source_problems({**BROKERS, **options}))


def test_a_secret_is_never_in_a_problem() -> None:
    jaas = 'x required username="svc";'  # the password is missing, say so without the rest
    problems = source_problems(
        {
            **BROKERS,
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": jaas,
        }
    )
    assert problems and all("svc" not in p and jaas not in p for p in problems)
