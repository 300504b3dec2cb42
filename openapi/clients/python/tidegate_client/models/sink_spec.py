from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.sink_spec_options import SinkSpecOptions


T = TypeVar("T", bound="SinkSpec")


@_attrs_define
class SinkSpec:
    """Where a query writes, declared: the runtime refuses a query whose writer says otherwise,
    and a file sink's log is checked against the state a query resumes before anything stops.

        Attributes:
            format_ (str): The writer's format: parquet, json, csv, orc, text (file sinks: exactly-once), foreachBatch
                (exactly-once when its write is idempotent by batch id), or any other Spark sink (at-least-once: a re-run batch
                is written again).
            path (None | str | Unset): A file sink's output folder (its 'path' option): required for a file sink.
            options (SinkSpecOptions | Unset): Options the writer must carry with these values (others are free).
    """

    format_: str
    path: None | str | Unset = UNSET
    options: SinkSpecOptions | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        format_ = self.format_

        path: None | str | Unset
        if isinstance(self.path, Unset):
            path = UNSET
        else:
            path = self.path

        options: dict[str, Any] | Unset = UNSET
        if not isinstance(self.options, Unset):
            options = self.options.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "format": format_,
            }
        )
        if path is not UNSET:
            field_dict["path"] = path
        if options is not UNSET:
            field_dict["options"] = options

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.sink_spec_options import SinkSpecOptions  # noqa: PLC0415

        d = dict(src_dict)
        format_ = d.pop("format")

        def _parse_path(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        path = _parse_path(d.pop("path", UNSET))

        _options = d.pop("options", UNSET)
        options: SinkSpecOptions | Unset
        if isinstance(_options, Unset):
            options = UNSET
        else:
            options = SinkSpecOptions.from_dict(_options)

        sink_spec = cls(
            format_=format_,
            path=path,
            options=options,
        )

        return sink_spec
