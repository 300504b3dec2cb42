from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="PreviewLate")


@_attrs_define
class PreviewLate:
    """Of one query that would replay records: the event-time watermark it would start with
    and how many replayed records lie behind it (Spark's stateful operators may drop those
    as late; docs/late-data.md).

        Attributes:
            source (str):
            query (str):
            replayed (int): Records this query would read again.
            watermark (datetime.datetime | None): The watermark its next batch filters late rows with now (null: none).
            start_watermark (datetime.datetime | None): The watermark it would start with after the startpoints are applied.
            lowered (bool): The rewind lowers the watermark (to keep the replay).
            behind (int | None): Replayed records with a time before start_watermark (may be dropped as late); null when
                their times cannot all be read.
            note (str): The same, said for a person.
    """

    source: str
    query: str
    replayed: int
    watermark: datetime.datetime | None
    start_watermark: datetime.datetime | None
    lowered: bool
    behind: int | None
    note: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        source = self.source

        query = self.query

        replayed = self.replayed

        watermark: None | str
        if isinstance(self.watermark, datetime.datetime):
            watermark = self.watermark.isoformat()
        else:
            watermark = self.watermark

        start_watermark: None | str
        if isinstance(self.start_watermark, datetime.datetime):
            start_watermark = self.start_watermark.isoformat()
        else:
            start_watermark = self.start_watermark

        lowered = self.lowered

        behind: int | None
        behind = self.behind

        note = self.note

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "source": source,
                "query": query,
                "replayed": replayed,
                "watermark": watermark,
                "start_watermark": start_watermark,
                "lowered": lowered,
                "behind": behind,
                "note": note,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        source = d.pop("source")

        query = d.pop("query")

        replayed = d.pop("replayed")

        def _parse_watermark(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                watermark_type_0 = datetime.datetime.fromisoformat(data)

                return watermark_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        watermark = _parse_watermark(d.pop("watermark"))

        def _parse_start_watermark(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                start_watermark_type_0 = datetime.datetime.fromisoformat(data)

                return start_watermark_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        start_watermark = _parse_start_watermark(d.pop("start_watermark"))

        lowered = d.pop("lowered")

        def _parse_behind(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        behind = _parse_behind(d.pop("behind"))

        note = d.pop("note")

        preview_late = cls(
            source=source,
            query=query,
            replayed=replayed,
            watermark=watermark,
            start_watermark=start_watermark,
            lowered=lowered,
            behind=behind,
            note=note,
        )

        preview_late.additional_properties = d
        return preview_late

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
