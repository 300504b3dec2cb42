"""A snapshot export reports how far it got while it copies: the worker writes bytes_total,
bytes_copied and files_copied onto the operation (throttled), GET /operations/{id} shows
them while it runs, and the CLI's live display reads them from there."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from rich.console import Console

from app.client.wait import progress_fields, render
from app.core.config import Settings
from app.snapshots import export as snapshot_export
from app.snapshots.export import ExportProgress
from app.snapshots.store import digests
from app.worker import execute as ops
from app.worker.core.context import WorkerContext
from app.worker.kinds import snapshot as snapshot_kind
from app.worker.loop import Worker
from tests.support.flows import API, get_snapshot, running_job


def test_export_reports_progress_while_it_copies(
    client: TestClient,
    cluster: str,
    ctx: WorkerContext,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, ck = running_job(client, ctx, settings, batches=0)
    ck.delta_bytes = 128 * 1024
    for _ in range(20):  # 2 partitions x 20 deltas (+ crc files, logs): ~90 files, ~5 MiB
        ck.batch()
    # A slow store (each file takes >= 10 ms to read) and a lower throttle, so the export
    # lasts about a second and reports many times. The copy waits for the watcher to have
    # read the API once per file (lockstep, bounded), so the watcher sees every report
    # however loaded the machine is.
    real_hash = digests.hash_fd
    looked = threading.Event()

    def slow_hash(fd: int) -> str:
        looked.wait(10)
        looked.clear()
        time.sleep(0.01)
        return real_hash(fd)

    monkeypatch.setattr(digests, "hash_fd", slow_hash)
    monkeypatch.setattr(snapshot_export, "PROGRESS_SECONDS", 0.05)
    reports: list[dict[str, Any]] = []
    real_set = snapshot_kind.set_result

    def counting_set(ctx_: WorkerContext, op_id: int, result: dict[str, Any]) -> None:
        reports.append(result)
        real_set(ctx_, op_id, result)

    monkeypatch.setattr(snapshot_kind, "set_result", counting_set)

    r = client.post(f"{API}/jobs/j/snapshots", json={"name": "big", "stop": False})
    assert r.status_code == 202, r.text
    op_id = r.json()["id"]
    assert Worker(ctx, concurrency=1).claim() == op_id
    worker = threading.Thread(target=ops.execute, args=(ctx, op_id), daemon=True)
    started = time.monotonic()
    worker.start()
    seen: list[dict[str, Any]] = []
    while worker.is_alive() and time.monotonic() - started < 60:
        doc = client.get(f"{API}/operations/{op_id}").json()
        result = doc.get("result") or {}
        if doc["state"] == "running" and "bytes_copied" in result:
            seen.append(doc)
        looked.set()
        time.sleep(0.005)
    worker.join(timeout=60)
    elapsed = time.monotonic() - started
    assert not worker.is_alive(), "the export did not finish within 60 s"

    final = client.get(f"{API}/operations/{op_id}").json()
    assert final["state"] == "succeeded", final
    snapshot = get_snapshot(client, "j", "big")
    total, files = snapshot["size_bytes"], final["result"]["files"]
    assert total > 40 * 128 * 1024

    # Observed through the API while it ran: interim figures, growing, against a fixed total.
    copied = [d["result"]["bytes_copied"] for d in seen]
    interim = sorted({c for c in copied if 0 < c < total})
    assert len(interim) >= 3, f"saw only {copied} while exporting {total} bytes"
    assert copied == sorted(copied), "bytes_copied went backwards"
    for doc in seen:
        result = doc["result"]
        assert result["bytes_total"] == total and result["files_total"] == files
        assert result["snapshot"] == "big" and 0 <= result["files_copied"] <= files
        assert result["phase"] in ("exporting", "exported")

    # Throttled: one report at the start, one per 0.05 s at most, one at the end.
    exports = [x for x in reports if "bytes_copied" in x]
    assert 3 <= len(exports) <= elapsed / 0.05 + 2, (len(exports), elapsed)
    assert exports[0]["bytes_copied"] == 0 and exports[-1]["phase"] == "exported"
    assert exports[-1]["bytes_copied"] == total and exports[-1]["files_copied"] == files

    # The CLI's live display draws a bar from what the API returned mid-export.
    middle = next(d for d in seen if 0 < d["result"]["bytes_copied"] < total)
    assert progress_fields(middle)["bytes_copied"] == middle["result"]["bytes_copied"]
    console = Console(record=True, width=120)
    console.print(render(middle, time.monotonic()))
    text = console.export_text()
    assert "bytes " in text and f"/ {files}" in text and "phase=exporting" in text


def test_export_progress_is_throttled() -> None:
    now = [0.0]
    reports: list[dict[str, Any]] = []
    figures = ExportProgress(reports.append, interval=0.5, clock=lambda: now[0])
    figures.bytes_total, figures.files_total = 1000, 100
    figures.emit(force=True)
    for i in range(100):
        now[0] = i * 0.01  # 100 files in a second: one report past the start, not 100
        figures.file_done(f"f{i}", 10)
    figures.finish()
    assert [r["bytes_copied"] for r in reports] == [0, 510, 1000]
    assert reports[-1]["phase"] == "exported" and reports[-1]["files_copied"] == 100

    def broken(_: dict[str, Any]) -> None:
        raise RuntimeError("database away")

    quiet = ExportProgress(broken, interval=0.0)
    quiet.file_done("f", 1)  # a failing report does not fail the export
    assert quiet.bytes_copied == 1
