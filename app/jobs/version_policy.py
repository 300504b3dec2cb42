"""Who may make a version run what. A version is code the cluster runs as its service user:
an ``admin`` token may create any version; an ``operate`` token only one whose files lie
under an app root the admin configured (``TIDEGATE_APP_ROOTS``) and whose Spark conf stays
clear of the keys that load other code, change the driver's JVM or environment, or hide
secrets in the UI. See docs/security.md."""

from __future__ import annotations

import os
import re
from pathlib import PurePosixPath

from app.auth.service import Principal, Scope
from app.core.config import Settings
from app.core.errors import Forbidden
from app.jobs.schemas import VersionCreate

# Conf an operate token may never set: each would run code of its choosing or weaken what
# the admin set (the JVM's flags and classpath, extra jars/files/archives, the driver's
# environment, the Python that runs the driver, what the UI redacts, plugins and listeners).
DENIED_CONF_PATTERNS = (
    r"spark\.jars(\..+)?",  # spark.jars, .packages, .repositories, .ivySettings…
    r"spark\.(driver|executor|yarn\.am)\.(extra|default)(JavaOptions|ClassPath|LibraryPath)",
    r"spark\.(driver|executor)\.userClassPathFirst",
    r"spark\.(yarn\.appMasterEnv|executorEnv|kubernetes\.driverEnv)\..+",
    r"spark\.(sql\.)?redaction\..+",
    r"spark\.pyspark\.(driver\.)?python",
    r"spark\.(submit\.)?(pyFiles|files|archives)",
    r"spark\.(plugins|extraListeners|sql\.extensions|sql\.queryExecutionListeners)",
    r"spark\.sql\.streaming\.streamingQueryListeners",
    r"spark\.(driver|executor)\.resource\..+\.discoveryScript",
    r"spark\.hadoop\..+\.impl",
)
DENIED_CONF = re.compile("|".join(f"(?:{p})" for p in DENIED_CONF_PATTERNS), re.IGNORECASE)
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def app_roots(settings: Settings) -> list[str]:
    """TIDEGATE_APP_ROOTS: comma-separated directories (or URL prefixes) versions may run."""
    return [r.strip() for r in (settings.app_roots or "").split(",") if r.strip()]


def check_version(body: VersionCreate, actor: Principal, settings: Settings) -> None:
    """Raise ``Forbidden`` naming the first path or conf key an ``operate`` token may not use."""
    if actor.allows(Scope.ADMIN):
        return
    for key in body.conf:
        if DENIED_CONF.fullmatch(key):
            raise Forbidden(
                f"conf '{key}' loads code or changes the driver's JVM or environment: only an "
                "admin token may set it. Remove it, or ask an admin to create this version.",
                errors=[{"field": f"conf.{key}", "message": "admin only"}],
            )
    roots = app_roots(settings)
    paths = [("app.file", body.app.file)] + [("app.py_files", f) for f in body.app.py_files]
    for field, path in paths:
        if not _under_a_root(path, roots):
            where = ", ".join(roots) if roots else "none are configured (TIDEGATE_APP_ROOTS)"
            raise Forbidden(
                f"{field} '{path}' is not under an app root ({where}): an operate token may "
                "only run files an admin placed there. Put the file under an app root, or ask "
                "an admin to create this version.",
                errors=[{"field": field, "message": "outside the app roots"}],
            )


def _under_a_root(path: str, roots: list[str]) -> bool:
    if _URL.match(path) and not path.startswith(("file:", "local:")):
        return any(_URL.match(r) and path.startswith(r.rstrip("/") + "/") for r in roots)
    local = path.split(":", 1)[1] if path.startswith(("file:", "local:")) else path
    local = "/" + local.lstrip("/") if path.startswith("file://") else local
    resolved = os.path.realpath(local)  # '..' and links resolved: the file that will run
    for root in roots:
        if _URL.match(root):
            continue
        base = os.path.realpath(root)
        if PurePosixPath(resolved).is_relative_to(base) and resolved != base:
            return True
    return False
