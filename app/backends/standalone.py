"""Spark standalone cluster backend: the master's REST submission API (cluster deploy mode).

Python apps are submitted the way spark-submit would if it allowed cluster mode for Python on
standalone: main class ``org.apache.spark.deploy.PythonRunner`` with the ``.py`` file and the
py-files csv as its first two arguments. Drivers run in ``<worker work-dir>/<driver-id>/``,
so every path must be absolute (or a URL the worker can fetch).

Finding a driver by tag: the master's ``/json/`` lists drivers with only id, state, cores,
memory, worker and main class -- never the app name or arguments. The only place a driver's
name is visible is the first line of its stderr, where the worker writes the launch command
(``"-Dspark.app.name=<tag>"``). ``find`` reads that line from the local work dir when it is
given, else through the worker's web UI (``/log/?driverId=…``). A driver that has no worker
yet (SUBMITTED) cannot be identified; ``find`` then raises ``TemporaryBackendError`` rather
than answer "not found" and invite a second submission.
"""

from __future__ import annotations

import importlib.metadata
import logging
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from app.backends import _http
from app.backends.base import (
    AppState,
    AppStatus,
    BackendError,
    PermanentBackendError,
    SubmitSpec,
    TemporaryBackendError,
)
from app.backends.spec import BackendSpec, ClusterAddress, FieldUse

logger = logging.getLogger(__name__)

STATES: dict[str, AppState] = {
    "SUBMITTED": AppState.PENDING,
    "RUNNING": AppState.RUNNING,
    "FINISHED": AppState.SUCCEEDED,
    "FAILED": AppState.FAILED,
    "ERROR": AppState.FAILED,
    "KILLED": AppState.KILLED,
    "RELAUNCHING": AppState.UNKNOWN,
    "UNKNOWN": AppState.UNKNOWN,
}
_ENDED = frozenset({"FINISHED", "FAILED", "ERROR", "KILLED"})
# What a master in STANDBY/RECOVERING says: it will accept the request once it is elected.
_NOT_READY = re.compile(r"not alive|can only accept|not ready|recovering|standby", re.I)
_APP_NAME = re.compile(r'"-Dspark\.app\.name=(.*?)"(?: |$)', re.M)
_ID = re.compile(r"\w[\w.-]*")  # driver ids end up in URL paths and file paths
_LOG_HEADER = re.compile(r"^==== Bytes \d+-\d+ of \d+ of .* ====\n?")
_LAUNCH_HEADER = re.compile(r"\ALaunch Command: .*\n=+\n+")
_HTML_TITLE = re.compile(r"<title>(.*?)</title>", re.I | re.S)
_LAUNCH_LINE = 16 * 1024  # a launch command is a few KB; read more only if it is longer
_MAX_LAUNCH_LINE = 256 * 1024
_MAX_TAIL_BYTES = 1024 * 1024


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the scheme's default port filled in."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme)


def _spark_version() -> str:
    try:
        return importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        return "4.0.0"


def _as_uri(path: str, what: str) -> str:
    """Absolute path → ``file:`` URI; URLs pass through; relative paths cannot work."""
    if "://" in path or path.startswith(("file:", "local:")):
        return path
    if not path.startswith("/"):
        raise PermanentBackendError(
            f"{what} must be an absolute path or a URL (drivers run in the worker's "
            f"work dir): {path!r}"
        )
    return f"file:{path}"


class StandaloneBackend:
    """Spark standalone REST submission client.

    ``ui_url`` defaults to the REST URL's host on port 8080. ``work_dir`` is the worker's
    ``--work-dir`` when it is readable from here (the local cluster); it makes ``find`` and
    ``log_tail`` read files instead of calling the worker's web UI. ``auth_header`` is sent
    with every request, for clusters that protect the REST server with
    ``spark.master.rest.filters``: an ``Authorization`` value or a ``(name, value)`` pair.
    ``spark.app.name`` is always the spec's tag (the key ``find`` relies on).
    """

    def __init__(
        self,
        rest_url: str,
        master_url: str,
        *,
        ui_url: str | None = None,
        work_dir: Path | str | None = None,
        http_client: httpx.Client | None = None,
        auth_header: str | tuple[str, str] | None = None,
        python: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.rest_url = rest_url.rstrip("/")
        self.master_url = master_url
        self.ui_url = (ui_url or self._default_ui_url(self.rest_url)).rstrip("/")
        self.work_dir = Path(work_dir) if work_dir is not None else None
        self.python = python or sys.executable
        self._own_client = http_client is None
        self._client = http_client or httpx.Client(timeout=timeout)
        if isinstance(auth_header, tuple):
            self._headers = {auth_header[0]: auth_header[1]}
        elif auth_header:
            self._headers = {"Authorization": auth_header}
        else:
            self._headers = {}
        self._tags: dict[str, str] = {}  # driver id → app name; launch commands never change
        self._spark_version = _spark_version()

    @staticmethod
    def _default_ui_url(rest_url: str) -> str:
        parts = urlsplit(rest_url)
        return urlunsplit((parts.scheme, f"{parts.hostname}:8080", "", "", ""))

    def close(self) -> None:
        if self._own_client:
            self._client.close()

    # -- protocol ---------------------------------------------------------------------------

    def ready(self) -> bool:
        try:
            resp = self._call("GET", f"{self.rest_url}/v1/submissions/readyz", what="readyz")
            return resp.status_code == 200 and bool(_http.json_body(resp, "readyz").get("success"))
        except BackendError as exc:
            logger.info("standalone master not ready: %s", exc)
            return False

    def submit(self, spec: SubmitSpec) -> str:
        what = f"submit {spec.tag}"
        body = self.submission_request(spec)
        resp = self._call("POST", f"{self.rest_url}/v1/submissions/create", what=what, json=body)
        data = self._checked(resp, what)
        if not data.get("success"):
            raise self._refusal(resp, what, data.get("message"))
        submission_id = data.get("submissionId")
        if not isinstance(submission_id, str) or not submission_id:
            raise TemporaryBackendError(f"{what}: no submissionId in the answer", detail=resp.text)
        logger.info("submitted %s to %s as %s", spec.tag, self.master_url, submission_id)
        return submission_id

    def submission_request(self, spec: SubmitSpec) -> dict[str, Any]:
        """The CreateSubmissionRequest for ``spec`` (public so tests and docs can show it)."""
        app = _as_uri(spec.file, "file")
        py_files = ",".join(_as_uri(p, "py_files entry") for p in spec.py_files)
        props = {"spark.pyspark.python": self.python, **spec.conf}
        props.update(
            {
                "spark.master": self.master_url,
                "spark.submit.deployMode": "cluster",
                "spark.app.name": spec.tag,
            }
        )
        if py_files:
            props["spark.submit.pyFiles"] = py_files
        return {
            "action": "CreateSubmissionRequest",
            "appResource": app,
            "mainClass": "org.apache.spark.deploy.PythonRunner",
            "appArgs": [app, py_files, *spec.args],
            "clientSparkVersion": self._spark_version,
            "environmentVariables": dict(spec.env),
            "sparkProperties": props,
        }

    def status(self, backend_id: str) -> AppStatus:
        what = f"status {backend_id}"
        _check_id(backend_id)
        resp = self._call("GET", f"{self.rest_url}/v1/submissions/status/{backend_id}", what=what)
        data = self._checked(resp, what)
        raw = data.get("driverState")
        message = data.get("message")
        if not data.get("success") or not isinstance(raw, str):
            if message and _NOT_READY.search(message):
                raise TemporaryBackendError(f"{what}: {_http.first_line(message)}", detail=message)
            # The master forgot the driver (restarted without recovery, or retention expired).
            return AppStatus(backend_id, AppState.UNKNOWN, "NOT_FOUND", message or None)
        state = STATES.get(raw, AppState.UNKNOWN)
        parts = [_without_stack(message)] if message else []
        tail = ""
        if state is AppState.FAILED:
            tail = self._safe_tail(backend_id, data.get("workerId"), 30) or ""
            if tail:
                parts.append(tail)
        # The Python traceback is stdout's, last: its exception goes first, as in Livy's log.
        return AppStatus(backend_id, state, raw, _http.cause_first("\n".join(parts), tail) or None)

    def statuses(self) -> dict[str, AppStatus]:
        # The master's JSON lists active and (its retained) completed drivers; one missing
        # here is asked about with ``status``.
        state = self._master_state()
        drivers = [*state.get("activedrivers", []), *state.get("completeddrivers", [])]
        return {
            str(d["id"]): AppStatus(
                str(d["id"]), STATES.get(str(d.get("state")), AppState.UNKNOWN), str(d.get("state"))
            )
            for d in drivers
            if isinstance(d, dict) and d.get("id")
        }

    def kill(self, backend_id: str) -> None:
        what = f"kill {backend_id}"
        _check_id(backend_id)
        resp = self._call("POST", f"{self.rest_url}/v1/submissions/kill/{backend_id}", what=what)
        data = self._checked(resp, what)
        if data.get("success"):
            logger.info("kill requested for %s", backend_id)
            return
        message = str(data.get("message") or "")
        if "already finished or does not exist" in message:
            return
        raise TemporaryBackendError(f"{what}: {_http.first_line(message)}", detail=message)

    def find(self, tag: str) -> str | None:
        state = self._master_state()
        workers = {
            w.get("id"): w.get("webuiaddress")
            for w in state.get("workers", [])
            if w.get("state") == "ALIVE"  # a dead worker's UI would only time out
        }
        drivers = [*state.get("activedrivers", []), *state.get("completeddrivers", [])]
        unidentified = []
        # Newest first: ids are driver-<yyyyMMddHHmmss>-<seq>.
        for driver in sorted(drivers, key=lambda d: str(d.get("id")), reverse=True):
            driver_id = str(driver.get("id"))
            name = self._driver_tag(driver_id, workers.get(driver.get("worker")))
            if name == tag:
                return driver_id
            if name is None and driver.get("state") not in _ENDED:
                unidentified.append(driver_id)
        if unidentified:
            raise TemporaryBackendError(
                f"find {tag}: cannot tell yet whether {', '.join(unidentified)} is it "
                "(no worker or launch command yet)"
            )
        return None

    def log_tail(self, backend_id: str, lines: int = 50) -> str | None:
        return self._safe_tail(backend_id, None, lines)

    # -- helpers ----------------------------------------------------------------------------

    def _call(self, method: str, url: str, *, what: str, **kwargs: Any) -> httpx.Response:
        # Credentials go only to the URLs the cluster was registered with: a worker UI
        # address is whatever the master reports, and may be anyone's.
        trusted = _origin(url) in {_origin(self.rest_url), _origin(self.ui_url)}
        headers = self._headers if trusted else {}
        return _http.request(self._client, method, url, what=what, headers=headers, **kwargs)

    def _checked(self, resp: httpx.Response, what: str) -> dict[str, Any]:
        """JSON body of a REST answer; 5xx and unparseable answers are temporary, other
        non-2xx answers (a malformed request, 401/403 from a filter) permanent."""
        _http.raise_for_retryable(resp, what)
        if resp.status_code >= 400:
            try:
                message = resp.json().get("message")
            except (ValueError, AttributeError):
                message = None
            if message is None and resp.status_code in (401, 403):
                # A servlet filter (spark.master.rest.filters) answers with an HTML page.
                title = _HTML_TITLE.search(resp.text)
                said = title.group(1).strip() if title else _http.first_line(resp.text[:2000])
                message = (
                    f"HTTP {resp.status_code} from the REST server's filter"
                    f" ({said or 'no detail'}): register the cluster with "
                    "credentials.authorization"
                )
            raise self._refusal(resp, what, message or resp.text[:2000] or None)
        return _http.json_body(resp, what)

    @staticmethod
    def _refusal(resp: httpx.Response, what: str, message: Any) -> BackendError:
        text = str(message) if message else None
        if text and _NOT_READY.search(_http.first_line(text)):
            return TemporaryBackendError(f"{what}: {_http.first_line(text)}", detail=text)
        return _http.refuse(resp, what, text)

    def _master_state(self) -> dict[str, Any]:
        resp = self._call("GET", f"{self.ui_url}/json/", what="master state")
        _http.raise_for_retryable(resp, "master state")
        if resp.status_code >= 400:
            raise _http.refuse(resp, "master state", None)
        return _http.json_body(resp, "master state")

    def _driver_tag(self, driver_id: str, worker_ui: str | None) -> str | None:
        if driver_id in self._tags:
            return self._tags[driver_id]
        try:
            head = self._read_log(driver_id, "stderr", worker_ui, head=_LAUNCH_LINE)
            if head and "\n" not in head:
                head = self._read_log(driver_id, "stderr", worker_ui, head=_MAX_LAUNCH_LINE)
        except BackendError as exc:
            logger.debug("cannot read the launch command of %s: %s", driver_id, exc)
            return None
        if not head or not head.startswith("Launch Command:"):
            return None
        match = _APP_NAME.search(head.split("\n", 1)[0])
        if match is None:
            return None
        self._tags[driver_id] = match.group(1)
        return match.group(1)

    def _safe_tail(self, driver_id: str, worker_id: str | None, lines: int) -> str | None:
        """stderr (the JVM) then stdout (the Python driver's own output and traceback)."""
        try:
            worker_ui = None
            if self.work_dir is None:
                if worker_id is None:
                    resp = self._call(
                        "GET", f"{self.rest_url}/v1/submissions/status/{driver_id}", what="status"
                    )
                    worker_id = self._checked(resp, "status").get("workerId")
                workers = self._master_state().get("workers", [])
                worker_ui = next(
                    (w.get("webuiaddress") for w in workers if w.get("id") == worker_id), None
                )
            parts = []
            for kind in ("stderr", "stdout"):
                text = self._read_log(
                    driver_id, kind, worker_ui, tail=min(_MAX_TAIL_BYTES, 400 * lines + 4096)
                )
                if text:
                    text = _LAUNCH_HEADER.sub("", text)  # the command line, not news
                if text and text.strip():
                    parts.append(f"--- {kind} ---\n{_http.tail_lines(text, lines)}")
            return "\n".join(parts) or None
        except BackendError as exc:
            logger.debug("no log for %s: %s", driver_id, exc)
            return None

    def _read_log(
        self,
        driver_id: str,
        kind: str,
        worker_ui: str | None,
        *,
        head: int | None = None,
        tail: int | None = None,
    ) -> str | None:
        """The first ``head`` or last ``tail`` bytes of a driver's stdout/stderr, or None."""
        if not _ID.fullmatch(driver_id):
            return None
        if self.work_dir is not None:
            return _read_file(self.work_dir / driver_id / kind, head=head, tail=tail)
        if not worker_ui:
            return None
        params: dict[str, str | int] = {"driverId": driver_id, "logType": kind}
        if head is not None:
            params.update(offset=0, byteLength=head)
        else:
            params["byteLength"] = tail or _MAX_TAIL_BYTES
        resp = self._call("GET", f"{worker_ui.rstrip('/')}/log/", what="driver log", params=params)
        if resp.status_code != 200:
            return None
        text = _LOG_HEADER.sub("", resp.text, count=1)
        if text.startswith("Error:"):
            return None
        return text


def _check_id(backend_id: str) -> None:
    if not _ID.fullmatch(backend_id):
        raise PermanentBackendError(f"not a driver id: {backend_id!r}")


def _read_file(path: Path, *, head: int | None, tail: int | None) -> str | None:
    try:
        with path.open("rb") as f:
            if tail is not None:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - tail))
                data = f.read(tail)
            else:
                data = f.read(head or _MAX_LAUNCH_LINE)
    except OSError:
        return None
    return data.decode("utf-8", errors="replace")


def _without_stack(text: str) -> str:
    """A Java exception message without its ``\\tat …`` frames."""
    return "\n".join(
        line for line in text.splitlines() if line.strip() and not line.startswith("\t")
    )


def from_cluster(
    cluster: ClusterAddress, *, authorization: str | None, timeout: float
) -> StandaloneBackend:
    """The backend for a registered standalone cluster. Its credentials go only to the REST
    and UI origins it was registered with (a master reports its workers' UI addresses, and
    those may be anyone's)."""
    if not cluster.master_url:
        raise PermanentBackendError(
            f"cluster '{getattr(cluster, 'name', cluster.url)}' is standalone but has no "
            "master_url (spark://host:7077)"
        )
    return StandaloneBackend(
        cluster.url,
        cluster.master_url,
        ui_url=cluster.ui_url,
        http_client=httpx.Client(timeout=timeout),
        auth_header=authorization,
    )


SPEC = BackendSpec(
    kind="standalone",
    summary="a Spark standalone master's REST submission API (drivers in cluster deploy mode)",
    build=from_cluster,
    url_help="the master's REST submission server (http://host:6066)",
    fields={
        "master_url": FieldUse(
            required=True,
            help="spark://host:7077, the master's RPC URL: REST submissions name the master "
            "they run on",
        ),
        "ui_url": FieldUse(
            required=False,
            help="the master web UI (http://host:8080), where drivers are found; defaults to "
            "the REST host on port 8080",
        ),
    },
)
