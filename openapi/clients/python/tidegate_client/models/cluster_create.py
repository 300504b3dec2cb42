from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.cluster_create_kind import ClusterCreateKind
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.cluster_credentials import ClusterCredentials


T = TypeVar("T", bound="ClusterCreate")


@_attrs_define
class ClusterCreate:
    """
    Attributes:
        name (str):
        kind (ClusterCreateKind): The backend the cluster's runs go through. standalone: a Spark standalone master's
            REST submission API (drivers in cluster deploy mode). livy: a Livy batch API (Apache Livy, EMR, Synapse,
            HDInsight, Cloudera, tidegate's runner). Adding one: docs/backends.md.
        url (str): Standalone: the master's REST submission server (http://host:6066). Livy: the Livy base URL
            (http://host:8998).
        master_url (None | str | Unset): Standalone (required): spark://host:7077, the master's RPC URL: REST
            submissions name the master they run on. Refused for other kinds.
        ui_url (None | str | Unset): Standalone (optional): the master web UI (http://host:8080), where drivers are
            found; defaults to the REST host on port 8080. Refused for other kinds.
        description (None | str | Unset):
        credentials (ClusterCredentials | None | Unset):
    """

    name: str
    kind: ClusterCreateKind
    url: str
    master_url: None | str | Unset = UNSET
    ui_url: None | str | Unset = UNSET
    description: None | str | Unset = UNSET
    credentials: ClusterCredentials | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.cluster_credentials import ClusterCredentials  # noqa: PLC0415

        name = self.name

        kind = self.kind.value

        url = self.url

        master_url: None | str | Unset
        if isinstance(self.master_url, Unset):
            master_url = UNSET
        else:
            master_url = self.master_url

        ui_url: None | str | Unset
        if isinstance(self.ui_url, Unset):
            ui_url = UNSET
        else:
            ui_url = self.ui_url

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        credentials: dict[str, Any] | None | Unset
        if isinstance(self.credentials, Unset):
            credentials = UNSET
        elif isinstance(self.credentials, ClusterCredentials):
            credentials = self.credentials.to_dict()
        else:
            credentials = self.credentials

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "kind": kind,
                "url": url,
            }
        )
        if master_url is not UNSET:
            field_dict["master_url"] = master_url
        if ui_url is not UNSET:
            field_dict["ui_url"] = ui_url
        if description is not UNSET:
            field_dict["description"] = description
        if credentials is not UNSET:
            field_dict["credentials"] = credentials

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.cluster_credentials import ClusterCredentials  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        kind = ClusterCreateKind(d.pop("kind"))

        url = d.pop("url")

        def _parse_master_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        master_url = _parse_master_url(d.pop("master_url", UNSET))

        def _parse_ui_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        ui_url = _parse_ui_url(d.pop("ui_url", UNSET))

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        def _parse_credentials(data: object) -> ClusterCredentials | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                credentials_type_0 = ClusterCredentials.from_dict(data)

                return credentials_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ClusterCredentials | None | Unset, data)

        credentials = _parse_credentials(d.pop("credentials", UNSET))

        cluster_create = cls(
            name=name,
            kind=kind,
            url=url,
            master_url=master_url,
            ui_url=ui_url,
            description=description,
            credentials=credentials,
        )

        return cluster_create
