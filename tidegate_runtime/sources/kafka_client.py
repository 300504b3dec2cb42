"""The Kafka resolver tidegate ships: a kafka-python consumer that answers what startpoints
need (partitions, earliest and end offsets, offsets for a time, the time of a record), built
from the same options as the query's Spark Kafka reader.

``source_problems`` is what the control plane checks when a version is created, so a Kafka
source that tidegate cannot drive is refused then, with what is missing, not at run time. It
imports only the standard library; kafka-python is imported when a resolver is built (in the
driver: the worker ships kafka-python inside the runtime zip, app/worker/core/runtime_bundle.py).

Spark's Kafka options map to kafka-python's settings as follows; anything else in ``kafka.*``
is Spark's and the resolver does not need it:

* ``kafka.bootstrap.servers`` → ``bootstrap_servers`` (required, as for Spark);
* ``kafka.security.protocol`` → ``security_protocol`` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL);
* ``kafka.sasl.mechanism`` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) with the ``username`` and
  ``password`` of ``kafka.sasl.jaas.config``;
* ``kafka.ssl.truststore.location`` of type PEM → ``ssl_cafile``; a PEM
  ``kafka.ssl.keystore.location`` → the client certificate and key;
  ``kafka.ssl.endpoint.identification.algorithm`` set empty → no host name check.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from tidegate_runtime.sources.positions import StartpointError

T = TypeVar("T")

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# Spark reads these ahead of startingOffsets: a startpoint would be silently overruled.
OVERRULING_OPTIONS = ("startingTimestamp", "startingOffsetsByTimestamp")
_JAAS_FIELD = re.compile(r'\b(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')


class KafkaClientError(StartpointError):
    """The brokers cannot answer (unreachable, unknown topic, an inconsistent answer); the
    message says what to do, for a person."""


def topic_of(options: Mapping[str, Any]) -> str | None:
    topic = str(options.get("subscribe") or "").strip()
    return topic if topic and "," not in topic else None


def source_problems(options: Mapping[str, Any]) -> list[str]:
    """What keeps tidegate from driving this Kafka source (empty: nothing)."""
    problems = []
    if not str(options.get("kafka.bootstrap.servers") or "").strip():
        problems.append("'kafka.bootstrap.servers' is missing (the brokers to read from)")
    if options.get("subscribePattern") or options.get("assign"):
        problems.append(
            "tidegate reads a Kafka source by 'subscribe' (one topic): 'subscribePattern' and "
            "'assign' leave it unable to name the partitions startpoints, drains and backlog "
            "refer to; declare one source per topic"
        )
    elif topic_of(options) is None:
        problems.append("'subscribe' must name exactly one topic (declare one source per topic)")
    for key in OVERRULING_OPTIONS:
        if key in options:
            problems.append(
                f"'{key}' overrules the offsets tidegate's startpoints give Spark "
                "(startingOffsets): remove it and set a TIMESTAMP startpoint instead"
            )
    try:
        client_config(options)
    except KafkaClientError as exc:
        problems.append(str(exc))
    return problems


def client_config(options: Mapping[str, Any]) -> dict[str, Any]:
    """kafka-python consumer settings for a Spark Kafka source's options."""
    servers = [s.strip() for s in str(options.get("kafka.bootstrap.servers") or "").split(",")]
    config: dict[str, Any] = {"bootstrap_servers": [s for s in servers if s]}
    protocol = str(options.get("kafka.security.protocol") or "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise KafkaClientError(
            f"'kafka.security.protocol' {protocol} is not one of {', '.join(PROTOCOLS)}"
        )
    config["security_protocol"] = protocol
    if protocol.startswith("SASL"):
        config.update(_sasl(options))
    if protocol.endswith("SSL"):
        config.update(_ssl(options))
    return config


def _sasl(options: Mapping[str, Any]) -> dict[str, Any]:
    mechanism = str(options.get("kafka.sasl.mechanism") or "GSSAPI").upper()
    if mechanism not in MECHANISMS:
        raise KafkaClientError(
            f"SASL mechanism {mechanism} is not one tidegate's resolver can use (it can: "
            f"{', '.join(MECHANISMS)}); set 'kafka.sasl.mechanism'"
        )
    fields = dict(_JAAS_FIELD.findall(str(options.get("kafka.sasl.jaas.config") or "")))
    if "username" not in fields or "password" not in fields:
        raise KafkaClientError(
            '\'kafka.sasl.jaas.config\' must carry username="…" and password="…" for SASL '
            f"{mechanism}"
        )
    return {
        "sasl_mechanism": mechanism,
        "sasl_plain_username": fields["username"].replace('\\"', '"'),
        "sasl_plain_password": fields["password"].replace('\\"', '"'),
    }


def _ssl(options: Mapping[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if options.get("kafka.ssl.truststore.location"):
        config["ssl_cafile"] = _pem_store(options, "truststore")
    if options.get("kafka.ssl.keystore.location"):
        config["ssl_certfile"] = _pem_store(options, "keystore")
        if options.get("kafka.ssl.key.password"):
            config["ssl_password"] = str(options["kafka.ssl.key.password"])
    if options.get("kafka.ssl.endpoint.identification.algorithm") == "":
        config["ssl_check_hostname"] = False
    return config


def _pem_store(options: Mapping[str, Any], store: str) -> str:
    """The location of a trust or key store, which kafka-python reads only as PEM."""
    if str(options.get(f"kafka.ssl.{store}.type") or "JKS").upper() != "PEM":
        kind = "trust" if store == "truststore" else "key"
        raise KafkaClientError(
            f"tidegate's resolver reads a PEM {kind} store: set 'kafka.ssl.{store}.type' to "
            "PEM (a JKS store it cannot read)"
        )
    return str(options[f"kafka.ssl.{store}.location"])


class ClientResolver:
    """:class:`tidegate_runtime.sources.positions.KafkaResolver` over a kafka-python consumer (no
    group: it commits nothing and joins nothing)."""

    def __init__(self, options: Mapping[str, Any], timeout_s: float = 30.0) -> None:
        self.config = client_config(options)
        if not self.config["bootstrap_servers"]:
            raise KafkaClientError(
                "'kafka.bootstrap.servers' is missing (the brokers to read from)"
            )
        self.brokers = ",".join(self.config["bootstrap_servers"])
        self.timeout_ms = int(timeout_s * 1000)
        self._consumer: Any = None

    @property
    def consumer(self) -> Any:
        if self._consumer is None:
            from kafka import KafkaConsumer

            self._consumer = self._ask(
                lambda: KafkaConsumer(
                    group_id=None,
                    enable_auto_commit=False,
                    bootstrap_timeout_ms=self.timeout_ms,
                    request_timeout_ms=self.timeout_ms,
                    **self.config,
                )
            )
        return self._consumer

    def _ask(self, call: Callable[[], T]) -> T:
        """``call``, with the client's errors said as what to check."""
        from kafka.errors import KafkaError

        try:
            return call()
        except KafkaError as exc:
            raise KafkaClientError(
                f"the Kafka brokers {self.brokers} did not answer ({type(exc).__name__}: "
                f"{exc}): check 'kafka.bootstrap.servers', the security options and that the "
                "driver can reach them"
            ) from None

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _partitions(self, topic: str) -> list[Any]:
        from kafka import TopicPartition

        found = self._ask(lambda: self.consumer.partitions_for_topic(topic))
        if not found:
            raise KafkaClientError(f"topic '{topic}' does not exist on {self.brokers}")
        return [TopicPartition(topic, p) for p in sorted(found)]

    def partitions(self, topic: str) -> list[int]:
        return [tp.partition for tp in self._partitions(topic)]

    def earliest(self, topic: str) -> dict[int, int]:
        partitions = self._partitions(topic)
        got = self._ask(lambda: self.consumer.beginning_offsets(partitions))
        return {tp.partition: int(o) for tp, o in got.items()}

    def latest(self, topic: str) -> dict[int, int]:
        partitions = self._partitions(topic)
        got = self._ask(lambda: self.consumer.end_offsets(partitions))
        return {tp.partition: int(o) for tp, o in got.items()}

    def offsets_for_times(self, topic: str, ts_ms: int) -> dict[int, int | None]:
        """The broker's answer, checked: the record at an offset it names must be at least
        as recent as ``ts_ms`` (a broker that gets ListOffsets wrong would otherwise rewind
        a query to the wrong place without a word)."""
        wanted = dict.fromkeys(self._partitions(topic), ts_ms)
        asked = self._ask(lambda: self.consumer.offsets_for_times(wanted))
        result: dict[int, int | None] = {}
        for tp, found in asked.items():
            if found is None:
                result[tp.partition] = None
                continue
            at = self.timestamp_at(topic, tp.partition, int(found.offset))
            if at is not None and at < ts_ms:
                raise KafkaClientError(
                    f"the broker says partition {tp.partition} of '{topic}' reaches time "
                    f"{ts_ms} at offset {found.offset}, but the record there is from {at}: it "
                    "does not answer offsets-for-times correctly; use an OFFSET startpoint"
                )
            result[tp.partition] = int(found.offset)
        return result

    def timestamp_at(self, topic: str, partition: int, offset: int) -> int | None:
        """The time of the first record at or after ``offset`` (None: there is none)."""
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)
        if offset >= self.latest(topic).get(partition, 0):
            return None  # no record there yet: nothing to wait for
        consumer = self.consumer

        def first_record() -> list[Any]:
            consumer.assign([tp])
            try:
                consumer.seek(tp, offset)
                return consumer.poll(timeout_ms=self.timeout_ms, max_records=1).get(tp) or []
            finally:
                consumer.unsubscribe()

        records = self._ask(first_record)
        return int(records[0].timestamp) if records else None

    def times_between(self, topic: str, partition: int, start: int, end: int) -> list[int] | None:
        """The times of the records of ``[start, end)`` (what a preview counts as late); None
        when they cannot all be read (retention took some, or the broker is slow)."""
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)
        consumer = self.consumer

        def read_range() -> list[int] | None:
            consumer.assign([tp])
            try:
                consumer.seek(tp, start)
                times: list[int] = []
                while consumer.position(tp) < end:
                    batch = consumer.poll(timeout_ms=self.timeout_ms).get(tp)
                    if not batch:
                        return None  # the broker is slow: never a count of part of them
                    times += [int(r.timestamp) for r in batch if r.offset < end]
                return times
            finally:
                consumer.unsubscribe()

        if start >= end:
            return []
        if start < self.earliest(topic).get(partition, 0):
            return None  # retention took some: a seek there would land elsewhere
        return self._ask(read_range)
