"""Who may make a version run what. A version is code the cluster runs as its service user:
an ``admin`` token may create any version; an ``operate`` token only one whose files lie
under an app root the admin configured (``TIDEGATE_APP_ROOTS``), parsed once, strictly, and
stored in the canonical form that was checked (app_paths.py), and whose Spark conf keys are on
an allow-list of tuning settings. See docs/security.md."""

from __future__ import annotations

import re

from app.auth.service import Principal, Scope
from app.core.config import Settings
from app.core.errors import Forbidden
from app.jobs import app_paths
from app.jobs.schemas import VersionCreate

# Conf an operate token may set: an allow-list of tuning keys (resources, parallelism, SQL and
# streaming settings, state store). Anything else — a key that loads code, a class, an image
# or a file, or changes the JVM, the environment or what the UI redacts, and every key Spark
# may add tomorrow — is an admin's. Spark's conf keys are case-sensitive: so is this.
ALLOWED_CONF_PATTERNS = (
    r"spark\.sql\.[A-Za-z0-9_.-]+",  # minus SQL_DENIED below
    r"spark\.(driver|executor)\.(memory|cores|memoryOverhead|memoryOverheadFactor)",
    r"spark\.driver\.maxResultSize",
    r"spark\.executor\.(instances|heartbeatInterval)",
    r"spark\.(cores\.max|default\.parallelism|scheduler\.mode|network\.timeout)",
    r"spark\.task\.(cpus|maxFailures)",
    r"spark\.dynamicAllocation\.[A-Za-z.]+",
    r"spark\.memory\.(fraction|storageFraction|offHeap\.enabled|offHeap\.size)",
    r"spark\.speculation(\.[A-Za-z.]+)?",
    r"spark\.locality\.wait(\.[A-Za-z]+)?",
    r"spark\.python\.worker\.(memory|reuse)",
    r"spark\.(rdd|shuffle|broadcast)\.compress",
    r"spark\.shuffle\.(spill\.compress|file\.buffer|partitions)",
    r"spark\.ui\.(enabled|showConsoleProgress|retainedJobs|retainedStages)",
)
# Under spark.sql.*, what loads code or classes, reaches a metastore or catalog, writes
# elsewhere, or hides secrets.
SQL_DENIED_PATTERNS = (
    r"spark\.sql\.(extensions|queryExecutionListeners|catalogImplementation|warehouse\.dir)",
    r"spark\.sql\.streaming\.(streamingQueryListeners|checkpointLocation)",
    r"spark\.sql\.(hive|catalog|redaction|sources)\..*",
    r"spark\.sql\.streaming\.(stateStore\.)?.*[Cc]lass",  # except the two providers below
)
# The state store providers a version may choose between (HDFS-backed, RocksDB).
STATE_STORE_PROVIDERS = frozenset(
    {
        "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    }
)
PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"
ALLOWED_CONF = re.compile("|".join(f"(?:{p})" for p in ALLOWED_CONF_PATTERNS))
SQL_DENIED = re.compile("|".join(f"(?:{p})" for p in SQL_DENIED_PATTERNS))


def operate_may_set(key: str, value: str) -> bool:
    """Whether an operate token may set Spark conf ``key`` to ``value``."""
    if key == PROVIDER_KEY:
        return value in STATE_STORE_PROVIDERS
    return bool(ALLOWED_CONF.fullmatch(key)) and not SQL_DENIED.fullmatch(key)


def app_roots(settings: Settings) -> list[str]:
    """TIDEGATE_APP_ROOTS: comma-separated directories (or URL prefixes) versions may run."""
    return [r.strip() for r in (settings.app_roots or "").split(",") if r.strip()]


def check_version(body: VersionCreate, actor: Principal, settings: Settings) -> VersionCreate:
    """The version as it is stored: an ``operate`` token's with every file in the canonical
    form that was checked. Raise ``Forbidden`` naming the first path or conf key an operate
    token may not use."""
    if actor.allows(Scope.ADMIN):
        return body
    for key, value in body.conf.items():
        if not operate_may_set(key, str(value)):
            raise Forbidden(
                f"conf '{key}' is not one an operate token may set (resources, parallelism and "
                "SQL, streaming and state store settings are; keys that load code, classes, "
                "files or images, or change the JVM or the environment, are an admin's). "
                "Remove it, or ask an admin to create this version.",
                errors=[{"field": f"conf.{key}", "message": "admin only"}],
            )
    roots = app_roots(settings)
    file = _canonical("app.file", body.app.file, roots)
    py_files = [_canonical("app.py_files", f, roots) for f in body.app.py_files]
    app = body.app.model_copy(update={"file": file, "py_files": py_files})
    return body.model_copy(update={"app": app})


def _canonical(field: str, path: str, roots: list[str]) -> str:
    if not roots:
        refused = app_paths.Refused("no app roots are configured (TIDEGATE_APP_ROOTS)")
    else:
        form = app_paths.canonical(path, roots)
        if isinstance(form, str):
            return form
        refused = form
    where = ", ".join(roots) if roots else "none are configured (TIDEGATE_APP_ROOTS)"
    raise Forbidden(
        f"{field} '{path}' may not be run by an operate token: {refused.reason}. App roots: "
        f"{where}. Put the file under an app root and name it plainly, or ask an admin to "
        "create this version.",
        errors=[{"field": field, "message": refused.reason}],
    )
