from __future__ import annotations

from datetime import datetime

from pydantic import Field, SecretStr, field_validator

from app.backends.registry import BACKENDS
from app.core.redaction import has_url_credentials
from app.core.schemas import Body, Name, Response, redacting


class ClusterCredentials(Body):
    """Secrets for the backend; stored, never returned."""

    authorization: SecretStr | None = Field(
        None, description="A full Authorization header value, e.g. for spark.master.rest.filters."
    )
    username: str | None = Field(None, max_length=256)
    password: SecretStr | None = None


def _kinds() -> str:
    listed = " ".join(f"{kind}: {spec.summary}." for kind, spec in BACKENDS.items())
    return f"The backend the cluster's runs go through. {listed} Adding one: docs/backends.md."


def _url() -> str:
    return " ".join(f"{kind.capitalize()}: {spec.url_help}." for kind, spec in BACKENDS.items())


def _field(name: str) -> str:
    """What a kind-specific field is, for the kinds that use it (the others refuse it)."""
    uses = [
        f"{kind.capitalize()} ({'required' if use.required else 'optional'}): {use.help}."
        for kind, spec in BACKENDS.items()
        if (use := spec.fields.get(name)) is not None
    ]
    return " ".join(uses) + " Refused for other kinds."


class ClusterCreate(Body):
    name: Name = Field(examples=["local", "prod-standalone"])
    # Checked against the kind's backend spec at registration (app/clusters/service.py): the
    # kinds, what each field means to each, and which each needs come from the specs.
    kind: str = Field(
        json_schema_extra={"enum": list(BACKENDS)},
        description=_kinds(),
    )
    url: str = Field(
        pattern=r"^https?://[^\s/]+(/[^\s]*)?$",
        max_length=2048,
        description=_url(),
        examples=["http://127.0.0.1:6066", "http://127.0.0.1:8998"],
    )
    master_url: str | None = Field(
        None,
        pattern=r"^spark://[^\s/]+$",
        max_length=2048,
        description=_field("master_url"),
    )
    ui_url: str | None = Field(
        None,
        pattern=r"^https?://[^\s/]+(/[^\s]*)?$",
        max_length=2048,
        description=_field("ui_url"),
    )
    description: str | None = Field(None, max_length=4000)
    credentials: ClusterCredentials | None = None

    @field_validator("url", "ui_url")
    @classmethod
    def _no_credentials_in_url(cls, url: str | None) -> str | None:
        if url is not None and has_url_credentials(url):
            raise ValueError(
                "the URL must not carry credentials (user:password@ or token@): it is shown "
                "to every reader and in errors; put them in 'credentials' (authorization, or "
                "username and password) instead"
            )
        return url


class ClusterResponse(Response):
    name: str
    kind: str
    url: str
    master_url: str | None
    ui_url: str | None
    description: str | None
    has_credentials: bool
    reachable: bool | None = Field(
        None,
        description="Checked on GET of one cluster by an operate or admin token (at most "
        "every 30 s per API process); null in lists and for read tokens.",
    )
    reachability_error: str | None = None
    created_at: datetime

    _redact = redacting("url", "reachability_error")
