"""A Kafka job whose checkpoints live in object storage (TIDEGATE_CHECKPOINT_ROOT=s3a://…), on
real Spark (its S3A, the pinned hadoop-aws jars) and Apache Kafka, against a real S3 server
(moto's, over HTTP on loopback): submitted, its first commits in the bucket and nothing on the
local disk; stopped and restarted from its S3 checkpoint (the window open at the stop finished
exactly); a TIMESTAMP rewind keeping state, applied by rewriting the offset log in S3 (the
original kept beside it there); an update by drain to an incompatible version; a drain. The
output is checked against the topic itself (every record read back with its offset and Kafka
timestamp): nothing lost, nothing counted twice but what the rewind asked to read again. The
worker and the API read the checkpoints through s3fs (TIDEGATE_CHECKPOINT_STORAGE_OPTIONS), the
drivers through their Hadoop S3A. In CI on the embedded runner; ``TIDEGATE_SUITE=full`` (``make
chaos``) on the standalone cluster too."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from app.snapshots.store.object_files import RESTORING
from tests.operations.test_lifecycle_e2e import _job, _operate, _output
from tests.support.backends import BACKENDS, CI_BACKEND, Target
from tests.support.e2e import runner_cluster
from tests.support.kafka_topics import (
    PARTITIONS,
    T0,
    Topic,
    as_spark,
    end_offset,
    expected_counts,
    kafka_version,
    producing,
)
from tests.support.s3 import create_bucket, moto_server, s3a_conf, s3fs_options
from tests.support.sizes import FULL
from tests.support.stack import Stack, running_stack, wait_until

pytestmark = pytest.mark.e2e

QUERY = "windowed_counts"


@pytest.fixture(scope="module")
def s3_stack(
    tmp_path_factory: pytest.TempPathFactory, livy_runner: str
) -> Iterator[tuple[Stack, str, Any]]:
    """tidegate with its checkpoint root in a bucket on moto's S3 server, the runner
    registered and a worker running: (stack, endpoint, an s3fs client of the bucket)."""
    with moto_server() as endpoint:
        bucket = create_bucket(endpoint)
        options = s3fs_options(endpoint)
        tmp = tmp_path_factory.mktemp("s3-stack")
        # Run ids of their own: the runner is shared with the other stacks of the session.
        # Snapshots in the same bucket: the store copies state server-side, no byte through
        # tidegate (app/snapshots/store/object_files.py).
        with running_stack(
            tmp,
            first_id=800_000,
            checkpoints=(f"s3a://{bucket}/checkpoints", options),
            snapshots=(f"s3://{bucket}/snapshots", options),
        ) as stack:
            r = stack.client.post("/clusters", json=runner_cluster(livy_runner))
            assert r.status_code in (201, 409), r.text
            stack.start_worker()
            yield stack, endpoint, fsspec.filesystem("s3", **options, skip_instance_cache=True)


@pytest.fixture(params=BACKENDS)
def target(
    request: pytest.FixtureRequest,
    s3_stack: tuple[Stack, str, Any],
    cluster_python: str,
    team_pipelines: Path,
) -> Target:
    """The backend a scenario runs on (CI: ``CI_BACKEND``; ``TIDEGATE_SUITE=full``: both); the
    standalone cluster registered with the S3 stack when it is the one."""
    ci = CI_BACKEND.get(request.function.__name__, request.param)
    if not FULL and request.param != ci:
        pytest.skip(f"CI runs this scenario on {ci}; TIDEGATE_SUITE=full runs it on both")
    if request.param == "standalone":
        cluster = request.getfixturevalue("standalone_cluster")
        body = {
            "name": "standalone",
            "kind": "standalone",
            "url": cluster.rest_url,
            "master_url": cluster.master_url,
            "ui_url": cluster.ui_url,
        }
        r = s3_stack[0].client.post("/clusters", json=body)
        assert r.status_code in (201, 409), r.text
    return Target(request.param, cluster_python, team_pipelines)


def _keys(fs: Any, stack: Stack, job: str, run_id: int, folder: str) -> list[str]:
    """The names in ``folder`` of the run's query checkpoint, in the bucket."""
    url = f"{stack.checkpoint_url}/{job}/{run_id}/{QUERY}/{folder}"
    fs.invalidate_cache()
    try:
        return sorted(k.rsplit("/", 1)[-1] for k in fs.ls(url.split("://", 1)[1], detail=False))
    except FileNotFoundError:
        return []


def test_a_kafka_job_with_its_checkpoints_in_s3_restarts_rewinds_updates_and_drains(
    s3_stack: tuple[Stack, str, Any], target: Target, kafka_bootstrap: str, tmp_path: Path
) -> None:
    stack, endpoint, fs = s3_stack

    job = f"kafka-s3-{target.cluster}"
    topic = Topic(kafka_bootstrap, f"clicks-s3-{target.cluster}")
    out1, out2 = tmp_path / "out1", tmp_path / "out2"
    s3 = {"extra_conf": s3a_conf(endpoint), "jar_groups": ("spark-kafka", "hadoop-aws")}
    sp_url = f"/jobs/{job}/startpoints"

    # 1. Submitted on fresh checkpoints, reading the topic from its oldest records: its commits
    # land in the bucket, nothing under the local disk's default root.
    topic.produce(400, T0)  # 0:00 to 2:40
    end0 = topic.end()
    _job(stack, job)
    v1 = kafka_version(stack, job, target, kafka_bootstrap, topic.name, out1, **s3)
    oldest = {"startpoints": [{"source": "clicks", "type": "OLDEST"}]}
    assert stack.client.put(sp_url, json=oldest).status_code == 200
    submit = _operate(stack, job, "submit", {"version": v1})
    assert submit["state"] == "succeeded", submit
    run_id = submit["run_id"]
    wait_until(
        lambda: end_offset(stack, run_id), lambda end: end == as_spark(topic.name, end0), 240
    )
    assert _keys(fs, stack, job, run_id, "commits"), "no commit in the bucket"
    assert "metadata" in _keys(fs, stack, job, run_id, "")
    assert list((stack.tmp / "checkpoints").iterdir()) == []  # the local root stays empty
    read_0 = {p: (0, end0[p]) for p in range(PARTITIONS)}
    wait_until(lambda: _output(out1), lambda rows: rows == expected_counts(topic, [read_0]), 120)
    # The API reads the run's position in S3: what a resume point or a snapshot would name.
    coordinates = stack.client.get(f"/jobs/{job}/snapshot-coordinates").json()
    assert [c["query"] for c in coordinates["coordinates"]] == [QUERY], coordinates
    assert _operate(stack, job, "stop")["state"] == "succeeded"

    # 2. Restarted from its checkpoint in S3: the window open at the stop (2:00 to 3:00) is
    # finished with the records that came since, each record counted once.
    topic.produce(200, T0 + 160_000)  # 2:40 to 4:00
    topic.produce(100, T0 + 240_000)  # 4:00 to 4:40
    end_a = topic.end()
    assert _operate(stack, job, "restart")["state"] == "succeeded"
    wait_until(lambda: end_offset(stack, run_id), lambda end: end == as_spark(topic.name, end_a))
    before_rewind = expected_counts(topic, [{p: (0, end_a[p]) for p in range(PARTITIONS)}])
    wait_until(lambda: _output(out1), lambda rows: rows == before_rewind, 120)
    assert stack.run(run_id)["attempt"] == 1
    assert _operate(stack, job, "stop")["state"] == "succeeded"

    # 3. A rewind keeping state, by time (resolved against the broker): the offset log's
    # committed batch rewritten in S3, Spark's original kept beside it in the bucket. The
    # window open at the stop (4:00 to 5:00) keeps its records; from 3:30 on, each is read
    # again (the watermark lowered to the first of them: none dropped as late).
    topic.produce(100, T0 + 280_000)  # 4:40 to 5:20
    rewind_to = T0 + 210_000
    rewound = topic.at_time(rewind_to)
    r = stack.client.put(
        sp_url,
        json={"startpoints": [{"source": "clicks", "type": "TIMESTAMP", "value": rewind_to}]},
    )
    assert r.status_code == 200, r.text
    assert _operate(stack, job, "restart")["state"] == "succeeded"
    view = wait_until(lambda: stack.client.get(sp_url).json(), lambda v: v["pending"] == [], 120)
    rewind = view["applied"][0]
    assert rewind["batch_id"] is not None and rewind["run_id"] == run_id, rewind
    assert rewind["after_offsets"] == {str(p): o for p, o in rewound.items()}
    assert rewind["before_offsets"] == {str(p): o for p, o in end_a.items()}
    assert f".{rewind['batch_id']}.tidegate-orig" in _keys(fs, stack, job, run_id, "offsets")
    end_b = topic.end()
    wait_until(lambda: end_offset(stack, run_id), lambda end: end == as_spark(topic.name, end_b))
    kept_state = {p: (topic.at_time(T0 + 240_000)[p], end_a[p]) for p in range(PARTITIONS)}
    replayed = {p: (rewound[p], end_b[p]) for p in range(PARTITIONS)}
    after_rewind = expected_counts(topic, [kept_state, replayed])
    wait_until(
        lambda: _output(out1), lambda rows: rows == sorted(before_rewind + after_rewind), 180
    )

    # 4. An update by drain to an incompatible version (2-minute windows, another output)
    # while records keep arriving: the old run reads up to the end offsets it reports and
    # emits every window, the open ones too (its flush batch, planned in S3); the new run
    # starts on fresh checkpoints in S3 at exactly the next offset of each partition.
    v2 = kafka_version(
        stack, job, target, kafka_bootstrap, topic.name, out2, window="2 minutes", **s3
    )
    body = {"version": v2, "strategy": "drain", "verify_seconds": 5}
    with producing(topic, T0 + 320_000):
        update = _operate(stack, job, "update", body)
    assert update["state"] == "succeeded", update
    result = update["result"]
    end1 = {int(p): o for p, o in result["end_offsets"]["clicks"].items()}
    assert sorted(end1) == list(range(PARTITIONS)), result["end_offsets"]
    assert stack.run(run_id)["state"] == "drained"
    since_rewind = {p: (rewound[p], end1[p]) for p in range(PARTITIONS)}
    flushed = expected_counts(topic, [kept_state, since_rewind], flushed=True)
    assert _output(out1) == sorted(before_rewind + flushed)
    assert result["startpoints"] == {"clicks": {str(p): o for p, o in end1.items()}}
    new_run = result["run_id"]
    wait_until(lambda: _keys(fs, stack, job, new_run, "commits"), bool, 120)

    # 5. A drain of the new run, records still arriving: every 2-minute window of exactly the
    # records between the two ends, each record counted once.
    with producing(topic, topic.last_ts + 400):
        drained = _operate(stack, job, "drain", {"timeout_seconds": 240})
    assert drained["state"] == "succeeded", drained
    end2 = {int(p): o for p, o in drained["result"]["end_offsets"]["clicks"].items()}
    assert all(end1[p] <= end2[p] <= topic.end()[p] for p in range(PARTITIONS)), end2
    assert stack.run(new_run)["state"] == "drained"
    read_2 = {p: (end1[p], end2[p]) for p in range(PARTITIONS)}
    assert _output(out2) == expected_counts(topic, [read_2], window_ms=120_000, flushed=True)
    assert sum(row[2] for row in _output(out2)) == sum(end2[p] - end1[p] for p in end2)


def test_a_kafka_job_with_its_checkpoints_in_s3_is_updated_by_snapshot_and_resumed_from_one(
    s3_stack: tuple[Stack, str, Any], target: Target, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """A pre-warmed update by snapshot (its dry run on a local scratch copy of the snapshot,
    the new version's standby driver, the state restored into the new run's checkpoint in
    S3), then a snapshot of the running job, a stop and a submit from that snapshot: every
    record of the topic counted exactly once in the one output."""
    stack, endpoint, fs = s3_stack

    job = f"kafka-s3-snap-{target.cluster}"
    topic = Topic(kafka_bootstrap, f"clicks-s3-snap-{target.cluster}")
    out = tmp_path / "out"
    s3 = {"extra_conf": s3a_conf(endpoint), "jar_groups": ("spark-kafka", "hadoop-aws")}

    topic.produce(300, T0)  # 0:00 to 2:00
    _job(stack, job)
    v1 = kafka_version(stack, job, target, kafka_bootstrap, topic.name, out, **s3)
    oldest = {"startpoints": [{"source": "clicks", "type": "OLDEST"}]}
    assert stack.client.put(f"/jobs/{job}/startpoints", json=oldest).status_code == 200
    submit = _operate(stack, job, "submit", {"version": v1})
    assert submit["state"] == "succeeded", submit
    end0 = topic.end()
    wait_until(
        lambda: end_offset(stack, submit["run_id"]),
        lambda end: end == as_spark(topic.name, end0),
        240,
    )

    # 1. Update by snapshot to a new version of the same pipeline, pre-warmed.
    v2 = kafka_version(stack, job, target, kafka_bootstrap, topic.name, out, **s3)
    update = _operate(stack, job, "update", {"version": v2, "snapshot_name": "to-v2"})
    assert update["state"] == "succeeded", update
    details = {s["name"]: s.get("detail") or {} for s in update["steps"]}
    verdicts = [d for name, d in details.items() if re.fullmatch(r"dry_run(_\d)?", name)]
    assert verdicts and all(d.get("ok") for d in verdicts), details
    second = update["result"]["run_id"]
    (restored,) = [d["queries"][QUERY] for n, d in details.items() if n.endswith("materialise")]
    assert restored["checkpoint"].startswith("s3a://") and restored["files"] > 0, restored
    snapshot = stack.client.get(f"/jobs/{job}/snapshots/to-v2").json()
    assert snapshot["state"] == "ready" and snapshot["manifest"].startswith("s3://"), snapshot
    assert list((stack.tmp / "checkpoints").iterdir()) == []  # still nothing on local disk
    in_bucket = _keys(fs, stack, job, second, "")
    assert "commits" in in_bucket and RESTORING not in in_bucket, in_bucket  # complete

    topic.produce(100, T0 + 120_000)  # 2:00 to 2:40
    end1 = topic.end()
    wait_until(lambda: end_offset(stack, second), lambda e: e == as_spark(topic.name, end1), 180)

    # 2. A snapshot that stops the run (pre-copied while it runs, the rest after the stop;
    # the sink is then not ahead of it), and a submit from that snapshot.
    taken = _operate(stack, job, "snapshots", {"name": "mid", "stop": True})
    assert taken["state"] == "succeeded", taken
    topic.produce(100, T0 + 160_000)  # 2:40 to 3:20
    # (The update's dry run read a snapshot in S3 already: this submit skips its own.)
    resumed = _operate(stack, job, "submit", {"version": v2, "snapshot": "mid", "dry_run": False})
    assert resumed["state"] == "succeeded", resumed
    end2 = topic.end()
    wait_until(
        lambda: end_offset(stack, resumed["run_id"]),
        lambda end: end == as_spark(topic.name, end2),
        180,
    )
    every = expected_counts(topic, [{p: (0, end2[p]) for p in range(PARTITIONS)}])
    wait_until(lambda: _output(out), lambda rows: rows == every, 120)
    assert _operate(stack, job, "stop")["state"] == "succeeded"
