"""Kafka startpoints through tidegate's resolver (tidegate_runtime/sources/kafka_client.py) against
Apache Kafka itself (KRaft, one node, tests/support/kafka_broker.py), on Kafka-shaped
checkpoint files: all four types, TIMESTAMP answered by the broker and checked against the
record it names. One test keeps tansu, a broker that answers offsets-for-times wrongly, to
prove the check catches it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from fastapi.testclient import TestClient
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from sqlalchemy import Engine

from app.api.main import create_app
from app.core.config import Settings
from tests.startpoints.test_resolve import T0, P, write_checkpoint
from tests.support.api import version_body
from tests.support.kafka_broker import create_topic, produce, tansu
from tidegate_runtime.checkpoints import checkpoint as cp
from tidegate_runtime.driver.runtime import Runtime
from tidegate_runtime.sources import positions as sp
from tidegate_runtime.sources.kafka_client import ClientResolver, KafkaClientError

TOPIC = "clicks"
RECORDS = 10  # per partition; record i of partition p is at T0 + 1000 i + p


def _fill(address: str) -> None:
    create_topic(address, TOPIC, 2)
    produce(
        address,
        TOPIC,
        [(p, T0 + 1000 * i + p, f"{p}-{i}".encode()) for i in range(RECORDS) for p in (0, 1)],
    )


@pytest.fixture(scope="module")
def broker(kafka_bootstrap: str) -> str:
    _fill(kafka_bootstrap)
    return kafka_bootstrap


@pytest.fixture(scope="module")
def wrong_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with tansu(tmp_path_factory.mktemp("tansu")) as address:
        _fill(address)
        yield address


@pytest.fixture
def resolver(broker: str) -> Iterator[ClientResolver]:
    client = ClientResolver({"kafka.bootstrap.servers": broker, "subscribe": TOPIC})
    yield client
    client.close()


def options(broker: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": broker, "subscribe": TOPIC}


def test_the_resolver_reads_partitions_offsets_and_record_times(resolver: ClientResolver) -> None:
    assert resolver.partitions(TOPIC) == [0, 1]
    assert resolver.earliest(TOPIC) == {0: 0, 1: 0}
    assert resolver.latest(TOPIC) == {0: RECORDS, 1: RECORDS}
    assert resolver.timestamp_at(TOPIC, 1, 3) == T0 + 3001
    assert resolver.timestamp_at(TOPIC, 0, 0) == T0
    assert resolver.timestamp_at(TOPIC, 0, RECORDS) is None  # the end: no record, no wait


def test_every_startpoint_type_resolves_through_the_broker(
    broker: str, resolver: ClientResolver
) -> None:
    opts = options(broker)
    current = {0: 7, 1: 7}
    assert sp.resolve("kafka", opts, [P(1, "OLDEST")], current, resolver) == {0: 0, 1: 0}
    assert sp.resolve("kafka", opts, [P(1, "UPCOMING")], current, resolver) == {0: 10, 1: 10}
    got = sp.resolve("kafka", opts, [P(1, "OFFSET", 4, partition=1)], current, resolver)
    assert got == {0: 7, 1: 4}
    # With no checkpoint, the broker names the partitions (a fresh query's startingOffsets).
    assert sp.resolve("kafka", opts, [P(1, "OFFSET", 2)], None, resolver) == {0: 2, 1: 2}
    with pytest.raises(sp.StartpointError, match=r"offset 11 is beyond partition 0's end \(10\)"):
        sp.resolve("kafka", opts, [P(1, "OFFSET", 11)], current, resolver)
    with pytest.raises(sp.StartpointError, match="partition 2 does not exist"):
        sp.resolve("kafka", opts, [P(1, "OLDEST", partition=2)], current, resolver)
    # TIMESTAMP: the first record at or after the time, per partition (offsets-for-times),
    # checked against the record the broker names; past every record, the end.
    at = sp.resolve("kafka", opts, [P(1, "TIMESTAMP", T0 + 3500)], current, resolver)
    assert at == {0: 4, 1: 4}
    assert sp.resolve("kafka", opts, [P(1, "TIMESTAMP", T0 + 3000)], None, resolver) == {
        0: 3,
        1: 3,
    }
    assert sp.resolve("kafka", opts, [P(1, "TIMESTAMP", T0 + 1)], None, resolver) == {0: 1, 1: 0}
    late = T0 + 1000 * RECORDS
    assert sp.resolve("kafka", opts, [P(1, "TIMESTAMP", late)], current, resolver) == {
        0: RECORDS,
        1: RECORDS,
    }


def test_an_offset_rewind_lowers_the_watermark_to_the_first_replayed_record(
    broker: str, resolver: ClientResolver, tmp_path: Path
) -> None:
    """The event log's rule, on Kafka: the watermark goes to 1 ms before the earliest
    replayed record's time, read from the broker, so the replayed records are not late."""
    line = json.dumps({TOPIC: {"0": 7, "1": 7}})
    ck = write_checkpoint(tmp_path / "ck", 3, line)
    meta = json.dumps({"batchWatermarkMs": T0 + 5000, "batchTimestampMs": T0, "conf": {}})
    (ck / "offsets" / "3").write_text(f"v1\n{meta}\n{line}")
    (ck / "commits" / "3").write_text(f'v1\n{{"nextBatchWatermarkMs":{T0 + 6000}}}')
    opts = options(broker)
    app = sp.apply_to_checkpoint(ck, "q", "src", 0, "kafka", opts, [P(1, "OFFSET", 2)], resolver)
    assert app.before == {"0": 7, "1": 7} and app.after == {"0": 2, "1": 2}
    meta_after, lines = cp.read_offsets(ck, 3)
    assert json.loads(lines[0]) == {TOPIC: {"0": 2, "1": 2}}
    assert meta_after["batchWatermarkMs"] == T0 + 2000 - 1  # partition 0's record 2
    assert cp.read_commit(ck, 3)["nextBatchWatermarkMs"] == T0 + 2000 - 1
    # Forward again (past what was committed): nothing is replayed, the watermark stays.
    sp.apply_to_checkpoint(ck, "q", "src", 0, "kafka", opts, [P(2, "UPCOMING")], resolver)
    meta_after, lines = cp.read_offsets(ck, 3)
    assert json.loads(lines[0]) == {TOPIC: {"0": 10, "1": 10}}
    assert meta_after["batchWatermarkMs"] == T0 + 2000 - 1


def test_a_broker_that_answers_offsets_for_times_wrongly_is_caught(wrong_broker: str) -> None:
    """tansu 0.6.0 answers ListOffsets by timestamp with offset 0 whatever the time. Taken at
    its word, a TIMESTAMP startpoint would replay the whole topic; the resolver reads the
    record at the offset named and refuses (Apache Kafka answers {0: 4, 1: 4}, above)."""
    resolver = ClientResolver(options(wrong_broker))
    try:
        with pytest.raises(KafkaClientError, match="does not answer offsets-for-times correctly"):
            sp.resolve(
                "kafka", options(wrong_broker), [P(1, "TIMESTAMP", T0 + 3500)], None, resolver
            )
    finally:
        resolver.close()


def test_unreachable_brokers_and_unknown_topics_are_said_plainly(broker: str) -> None:
    nowhere = ClientResolver({"kafka.bootstrap.servers": "127.0.0.1:9"}, timeout_s=1.5)
    with pytest.raises(KafkaClientError, match=r"brokers 127\.0\.0\.1:9 did not answer"):
        nowhere.partitions(TOPIC)
    here = ClientResolver(options(broker), timeout_s=5)
    try:
        with pytest.raises(KafkaClientError, match="topic 'no-such-topic' does not exist"):
            here.latest("no-such-topic")
    finally:
        here.close()


def test_the_runtime_builds_the_resolver_from_the_source_s_options(broker: str) -> None:
    runtime = Runtime(spark=cast(Any, None))
    decl = {"kind": "kafka", "options": options(broker)}
    built = runtime._kafka("clicks", decl)
    assert isinstance(built, ClientResolver) and built.brokers == broker
    assert runtime._kafka("clicks", decl) is built  # one per source
    assert runtime._kafka("log", {"kind": "eventlog", "options": {}}) is None
    own = cast(sp.KafkaResolver, object())
    assert Runtime(spark=cast(Any, None), kafka_resolver=own)._kafka("clicks", decl) is own
    built.close()


def test_records_the_topic_deleted_are_never_started_from_in_silence(broker: str) -> None:
    """Retention deleted a partition's first records (DeleteRecords, as retention does): an
    OFFSET among them is refused, and so is a TIME that resolves to the oldest record held
    when that record is later than the time (records from that time may be gone); OLDEST
    starts at the oldest record held."""
    create_topic(broker, "expiring", 1)
    produce(broker, "expiring", [(0, T0 + 1000 * i, b"r") for i in range(RECORDS)])
    admin = KafkaAdminClient(bootstrap_servers=broker)
    try:
        admin.delete_records({TopicPartition("expiring", 0): 4})
    finally:
        admin.close()
    opts = {"kafka.bootstrap.servers": broker, "subscribe": "expiring"}
    here = ClientResolver(opts)
    try:
        assert here.earliest("expiring") == {0: 4}
        with pytest.raises(sp.StartpointError, match="offset 2 of partition 0 is gone"):
            sp.resolve("kafka", opts, [P(1, "OFFSET", 2)], {0: 9}, here)
        assert sp.resolve("kafka", opts, [P(1, "OFFSET", 4)], {0: 9}, here) == {0: 4}
        assert sp.resolve("kafka", opts, [P(1, "OLDEST")], {0: 9}, here) == {0: 4}
        with pytest.raises(sp.StartpointError, match="no longer holds records from that time"):
            sp.resolve("kafka", opts, [P(1, "TIMESTAMP", T0 + 1000)], {0: 9}, here)
        assert sp.resolve("kafka", opts, [P(1, "TIMESTAMP", T0 + 4000)], {0: 9}, here) == {0: 4}
        assert sp.resolve("kafka", opts, [P(1, "TIMESTAMP", T0 + 5500)], {0: 9}, here) == {0: 6}
    finally:
        here.close()


def test_the_preview_asks_only_brokers_an_admin_listed(
    broker: str, db: Engine, settings: Settings, client: TestClient, cluster: str
) -> None:
    """POST …/startpoints/preview of a Kafka source: against its brokers when an admin listed
    every one (TIDEGATE_KAFKA_PREVIEW_BROKERS), TIMESTAMP resolved by the broker; else the
    preview says which are not listed and what still previews, and connects to nothing."""
    body = version_body(
        queries=[{"sources": [{"name": "clicks", "kind": "kafka", "options": options(broker)}]}]
    )
    assert client.post("/api/v1/jobs", json={"name": "k"}).status_code == 201
    assert client.post("/api/v1/jobs/k/versions", json=body).status_code == 201
    points = [
        {"source": "clicks", "type": "TIMESTAMP", "value": T0 + 3500},
        {"source": "clicks", "partition": 1, "type": "UPCOMING"},
    ]
    assert client.put("/api/v1/jobs/k/startpoints", json={"startpoints": points}).status_code == 200

    refused = client.post("/api/v1/jobs/k/startpoints/preview").json()
    assert refused["rows"] == []
    (error,) = refused["errors"]
    assert "TIDEGATE_KAFKA_PREVIEW_BROKERS" in error["error"] and broker in error["error"]

    allowed = settings.model_copy(update={"kafka_preview_brokers": f"other:9092, {broker}"})
    app = create_app(allowed, engine=db)
    with TestClient(app, headers=dict(client.headers)) as previewing:
        shown = previewing.post("/api/v1/jobs/k/startpoints/preview").json()
    assert shown["errors"] == [], shown
    rows = {r["partition"]: r for r in shown["rows"]}
    assert {p: (r["type"], r["target"], r["move"]) for p, r in rows.items()} == {
        0: ("TIMESTAMP", 4, "unknown"),  # the first record at or after T0 + 3.5 s; no run yet
        1: ("UPCOMING", RECORDS, "unknown"),
    }

    # A source naming a trust store file is never previewed by the API (no file a client
    # names is read), listed brokers or not.
    stores = {**options(broker), "kafka.ssl.truststore.location": "/etc/passwd"}
    body = version_body(
        queries=[{"sources": [{"name": "clicks", "kind": "kafka", "options": stores}]}]
    )
    assert client.post("/api/v1/jobs/k/versions", json=body).status_code == 201
    with TestClient(app, headers=dict(client.headers)) as previewing:
        (error,) = previewing.post("/api/v1/jobs/k/startpoints/preview").json()["errors"]
    assert "kafka.ssl.truststore.location" in error["error"] and "root:" not in error["error"]


def test_the_records_a_rewind_replays_behind_the_watermark_are_counted_from_the_broker(
    broker: str,
) -> None:
    """Issue 53, what a preview counts: the replayed records whose Kafka timestamp is before
    the watermark the query would start with, read from the broker (a producer with a skewed
    clock wrote record 2 of partition 0 ten seconds early); unknown, never a partial count,
    when retention took some of them."""
    create_topic(broker, "skewed", 2)
    times = {0: [20, 21, 10, 22, 23], 1: [20, 21, 22, 23, 24]}
    produce(broker, "skewed", [(p, T0 + 1000 * s, b"r") for p, ss in times.items() for s in ss])
    opts = {"kafka.bootstrap.servers": broker, "subscribe": "skewed"}
    here = ClientResolver(opts)
    try:
        assert here.times_between("skewed", 0, 1, 4) == [T0 + 21_000, T0 + 10_000, T0 + 22_000]
        ranges = {0: (0, 5), 1: (0, 5)}
        assert sp.count_behind("kafka", opts, ranges, T0 + 20_000 - 1, here) == 1
        assert sp.count_behind("kafka", opts, ranges, T0 + 22_500, here) == 7
        assert sp.count_behind("kafka", opts, ranges, T0, here) == 0
        assert sp.count_behind("kafka", opts, ranges, T0, here, limit=9) is None  # 10 > limit
        admin = KafkaAdminClient(bootstrap_servers=broker)
        try:
            admin.delete_records({TopicPartition("skewed", 1): 2})
        finally:
            admin.close()
        assert here.times_between("skewed", 1, 0, 5) is None
        assert sp.count_behind("kafka", opts, ranges, T0 + 22_500, here) is None
    finally:
        here.close()
    # Without a resolver (a preview that may not ask the brokers) the count is unknown.
    assert sp.count_behind("kafka", opts, {0: (0, 5)}, T0, None) is None
