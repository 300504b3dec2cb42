"""Livy batch API backend (Apache Livy, EMR, Synapse, HDInsight, Cloudera, tidegate's runner).

Livy has no field for environment variables, so ``spec.env`` travels as conf:
``spark.yarn.appMasterEnv.<K>`` (the driver on YARN cluster mode; tidegate's runner sets
them on the spark-submit process). Never as ``spark.executorEnv.<K>``: the env is the
driver's (the run token, which only the driver uses), and executors need none of it.

A Livy server answers a second POST with an existing batch name with 400 "Duplicate session
name"; ``submit`` then returns the id of that batch, so resubmitting a tag is idempotent.
Real Livy forgets a batch after DELETE and after ``livy.server.session.state-retain.sec``:
``status`` then says UNKNOWN (raw state ``not_found``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import httpx

from app.backends import _http
from app.backends.base import (
    AppState,
    AppStatus,
    BackendError,
    SubmitSpec,
    TemporaryBackendError,
)
from app.backends.spec import BackendSpec, ClusterAddress

logger = logging.getLogger(__name__)

STATES: dict[str, AppState] = {
    "not_started": AppState.PENDING,
    "starting": AppState.PENDING,
    "running": AppState.RUNNING,
    "busy": AppState.RUNNING,
    "idle": AppState.RUNNING,
    "success": AppState.SUCCEEDED,
    "dead": AppState.FAILED,
    "error": AppState.FAILED,
    "killed": AppState.KILLED,
    "shutting_down": AppState.UNKNOWN,
    "recovering": AppState.UNKNOWN,
    "unknown": AppState.UNKNOWN,
}
# Livy refuses new sessions while too many are starting; that passes.
_BUSY = re.compile(r"too many|rejected", re.I)
_DUPLICATE = re.compile(r"duplicate session name", re.I)
# Lines read back from a failed batch's log to find the exception that ended it.
LOG_SCAN_LINES = 1000


def env_conf(env: dict[str, str]) -> dict[str, str]:
    """``spec.env`` as the Spark conf Livy can carry, for the driver only."""
    return {f"spark.yarn.appMasterEnv.{key}": value for key, value in env.items()}


class LivyBackend:
    """Livy batch client. ``auth`` is any httpx auth (e.g. ``("user", "password")`` for basic
    auth); ``X-Requested-By`` is always sent, as Livy's CSRF protection requires."""

    def __init__(
        self,
        url: str,
        *,
        http_client: httpx.Client | None = None,
        auth: httpx.Auth | tuple[str, str] | None = None,
        timeout: float = 10.0,
        page_size: int = 100,
    ) -> None:
        self.url = url.rstrip("/")
        self._own_client = http_client is None
        self._client = http_client or httpx.Client(timeout=timeout)
        self._auth = auth
        self._headers = {"X-Requested-By": "tidegate"}
        self.page_size = page_size

    def close(self) -> None:
        if self._own_client:
            self._client.close()

    def ready(self) -> bool:
        try:
            resp = self._call("GET", "/batches", what="list batches", params={"from": 0, "size": 1})
            return resp.status_code == 200
        except BackendError as exc:
            logger.info("livy not ready: %s", exc)
            return False

    def batch_request(self, spec: SubmitSpec) -> dict[str, Any]:
        """The POST /batches body for ``spec``."""
        body: dict[str, Any] = {
            "file": spec.file,
            "args": list(spec.args),
            "conf": {**spec.conf, **env_conf(spec.env)},
            "name": spec.tag,
        }
        if spec.py_files:
            body["pyFiles"] = list(spec.py_files)
        return body

    def submit(self, spec: SubmitSpec) -> str:
        what = f"submit {spec.tag}"
        resp = self._call("POST", "/batches", what=what, json=self.batch_request(spec))
        _http.raise_for_retryable(resp, what)
        if resp.status_code >= 400:
            message = _message(resp)
            if _DUPLICATE.search(message or ""):
                existing = self.find(spec.tag)
                if existing is not None:
                    logger.info("%s was already submitted as batch %s", spec.tag, existing)
                    return existing
            if message and _BUSY.search(message):
                raise TemporaryBackendError(f"{what}: {message}", detail=resp.text[:4000])
            raise _http.refuse(resp, what, message)
        batch_id = _http.json_body(resp, what).get("id")
        if batch_id is None:
            raise TemporaryBackendError(f"{what}: no batch id in the answer", detail=resp.text)
        logger.info("submitted %s to %s as batch %s", spec.tag, self.url, batch_id)
        return str(batch_id)

    def status(self, backend_id: str) -> AppStatus:
        what = f"status {backend_id}"
        resp = self._call("GET", f"/batches/{backend_id}", what=what)
        if resp.status_code == 404:
            return AppStatus(backend_id, AppState.UNKNOWN, "not_found", _message(resp))
        body = self._ok(resp, what)
        raw = str(body.get("state") or "unknown")
        state = STATES.get(raw, AppState.UNKNOWN)
        message = None
        if state is AppState.FAILED:
            # The batch's own "log" is a short tail that often ends in shutdown noise.
            log = body.get("log")
            short = "\n".join(str(x) for x in log) if isinstance(log, list) else None
            message = self.log_tail(backend_id, 50) or short or None
        return AppStatus(backend_id, state, raw, message)

    def kill(self, backend_id: str) -> None:
        what = f"kill {backend_id}"
        resp = self._call("DELETE", f"/batches/{backend_id}", what=what)
        if resp.status_code == 404:
            return
        self._ok(resp, what)
        logger.info("deleted batch %s at %s", backend_id, self.url)

    def statuses(self) -> dict[str, AppStatus]:
        out = {}
        for batch in self._batches("list batches"):
            raw = str(batch.get("state") or "unknown")
            out[str(batch["id"])] = AppStatus(
                str(batch["id"]), STATES.get(raw, AppState.UNKNOWN), raw
            )
        return out

    def find(self, tag: str) -> str | None:
        found = [int(b["id"]) for b in self._batches(f"find {tag}") if b.get("name") == tag]
        return str(max(found)) if found else None

    def _batches(self, what: str) -> Iterator[dict[str, Any]]:
        """Every batch the server knows, page by page (GET /batches?from=&size=)."""
        start = 0
        while True:
            resp = self._call(
                "GET", "/batches", what=what, params={"from": start, "size": self.page_size}
            )
            body = self._ok(resp, what)
            sessions = body.get("sessions") or []
            yield from (s for s in sessions if isinstance(s, dict) and "id" in s)
            start += len(sessions)
            if not sessions or start >= int(body.get("total") or 0):
                return

    def log_tail(self, backend_id: str, lines: int = 50) -> str | None:
        what = f"log {backend_id}"
        try:
            # Read further back than the tail shown: the exception that ended the driver
            # may lie before it (_http.cause_first).
            resp = self._call(
                "GET",
                f"/batches/{backend_id}/log",
                what=what,
                params={"size": max(lines, LOG_SCAN_LINES)},
            )
            if resp.status_code == 404:
                return None
            log = self._ok(resp, what).get("log")
        except BackendError as exc:
            logger.debug("no log for batch %s: %s", backend_id, exc)
            return None
        if not isinstance(log, list):
            return None
        text = "\n".join(str(x) for x in log)
        return _http.cause_first(_http.tail_lines(text, lines), text) or None

    def _call(self, method: str, path: str, *, what: str, **kwargs: Any) -> httpx.Response:
        if self._auth is not None:
            kwargs["auth"] = self._auth
        return _http.request(
            self._client, method, self.url + path, what=what, headers=self._headers, **kwargs
        )

    @staticmethod
    def _ok(resp: httpx.Response, what: str) -> dict[str, Any]:
        _http.raise_for_retryable(resp, what)
        if resp.status_code >= 400:
            raise _http.refuse(resp, what, _message(resp))
        return _http.json_body(resp, what)


def _message(resp: httpx.Response) -> str | None:
    """Livy errors are ``{"msg": …}``; FastAPI's are ``{"detail": …}``."""
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:2000] or None
    if isinstance(body, dict):
        for key in ("msg", "message", "detail"):
            if body.get(key):
                return str(body[key])
    return None


def from_cluster(
    cluster: ClusterAddress, *, authorization: str | None, timeout: float
) -> LivyBackend:
    """The backend for a registered Livy cluster: only ever called at its own URL (relative
    paths on it), so the credentials travel as a default header."""
    headers = {"Authorization": authorization} if authorization else {}
    return LivyBackend(cluster.url, http_client=httpx.Client(timeout=timeout, headers=headers))


SPEC = BackendSpec(
    kind="livy",
    summary="a Livy batch API (Apache Livy, EMR, Synapse, HDInsight, Cloudera, tidegate's runner)",
    build=from_cluster,
    url_help="the Livy base URL (http://host:8998)",
)
