from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.app_spec import AppSpec
    from ..models.query_response import QueryResponse
    from ..models.version_response_conf import VersionResponseConf


T = TypeVar("T", bound="VersionResponse")


@_attrs_define
class VersionResponse:
    """
    Attributes:
        job (str):
        number (int):
        cluster (str):
        app (AppSpec):
        conf (VersionResponseConf): Secret-looking keys' values are redacted.
        queries (list[QueryResponse]):
        description (None | str):
        created_by (str):
        created_at (datetime.datetime):
    """

    job: str
    number: int
    cluster: str
    app: AppSpec
    conf: VersionResponseConf
    queries: list[QueryResponse]
    description: None | str
    created_by: str
    created_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job = self.job

        number = self.number

        cluster = self.cluster

        app = self.app.to_dict()

        conf = self.conf.to_dict()

        queries = []
        for queries_item_data in self.queries:
            queries_item = queries_item_data.to_dict()
            queries.append(queries_item)

        description: None | str
        description = self.description

        created_by = self.created_by

        created_at = self.created_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job": job,
                "number": number,
                "cluster": cluster,
                "app": app,
                "conf": conf,
                "queries": queries,
                "description": description,
                "created_by": created_by,
                "created_at": created_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.app_spec import AppSpec  # noqa: PLC0415
        from ..models.query_response import QueryResponse  # noqa: PLC0415
        from ..models.version_response_conf import VersionResponseConf  # noqa: PLC0415

        d = dict(src_dict)
        job = d.pop("job")

        number = d.pop("number")

        cluster = d.pop("cluster")

        app = AppSpec.from_dict(d.pop("app"))

        conf = VersionResponseConf.from_dict(d.pop("conf"))

        queries = []
        _queries = d.pop("queries")
        for queries_item_data in _queries:
            queries_item = QueryResponse.from_dict(queries_item_data)

            queries.append(queries_item)

        def _parse_description(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        description = _parse_description(d.pop("description"))

        created_by = d.pop("created_by")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        version_response = cls(
            job=job,
            number=number,
            cluster=cluster,
            app=app,
            conf=conf,
            queries=queries,
            description=description,
            created_by=created_by,
            created_at=created_at,
        )

        version_response.additional_properties = d
        return version_response

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
