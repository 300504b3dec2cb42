from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.app_spec import AppSpec
    from ..models.query_spec import QuerySpec
    from ..models.version_create_conf import VersionCreateConf


T = TypeVar("T", bound="VersionCreate")


@_attrs_define
class VersionCreate:
    """
    Attributes:
        app (AppSpec):
        cluster (str): A registered cluster's name.
        queries (list[QuerySpec]):
        conf (VersionCreateConf | Unset):
        description (None | str | Unset):
    """

    app: AppSpec
    cluster: str
    queries: list[QuerySpec]
    conf: VersionCreateConf | Unset = UNSET
    description: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        app = self.app.to_dict()

        cluster = self.cluster

        queries = []
        for queries_item_data in self.queries:
            queries_item = queries_item_data.to_dict()
            queries.append(queries_item)

        conf: dict[str, Any] | Unset = UNSET
        if not isinstance(self.conf, Unset):
            conf = self.conf.to_dict()

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "app": app,
                "cluster": cluster,
                "queries": queries,
            }
        )
        if conf is not UNSET:
            field_dict["conf"] = conf
        if description is not UNSET:
            field_dict["description"] = description

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.app_spec import AppSpec  # noqa: PLC0415
        from ..models.query_spec import QuerySpec  # noqa: PLC0415
        from ..models.version_create_conf import VersionCreateConf  # noqa: PLC0415

        d = dict(src_dict)
        app = AppSpec.from_dict(d.pop("app"))

        cluster = d.pop("cluster")

        queries = []
        _queries = d.pop("queries")
        for queries_item_data in _queries:
            queries_item = QuerySpec.from_dict(queries_item_data)

            queries.append(queries_item)

        _conf = d.pop("conf", UNSET)
        conf: VersionCreateConf | Unset
        if isinstance(_conf, Unset):
            conf = UNSET
        else:
            conf = VersionCreateConf.from_dict(_conf)

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        version_create = cls(
            app=app,
            cluster=cluster,
            queries=queries,
            conf=conf,
            description=description,
        )

        return version_create
