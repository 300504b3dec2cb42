"""Who may make a version run what. A version is code the cluster runs as its service user:
an ``admin`` token may create any version; an ``operate`` token only one whose files lie
under an app root the admin configured (``TIDEGATE_APP_ROOTS``), parsed once, strictly, and
stored in the canonical form that was checked (app_paths.py), and whose Spark conf keys are on
an allow-list of tuning settings. See docs/security.md."""

from __future__ import annotations

from app.auth.service import Principal, Scope
from app.core.config import Settings
from app.core.errors import Forbidden
from app.jobs import app_paths, conf_policy
from app.jobs.schemas import VersionCreate


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
        refused = conf_policy.problem(key, conf_policy.as_text(value))
        if refused:
            raise Forbidden(
                f"conf '{key}': {refused}. Fix or remove it, or ask an admin to create this "
                "version.",
                errors=[{"field": f"conf.{key}", "message": refused}],
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
