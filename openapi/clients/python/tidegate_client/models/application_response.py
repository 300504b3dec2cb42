from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.application_response_after_offsets import ApplicationResponseAfterOffsets
    from ..models.application_response_before_offsets_type_0 import ApplicationResponseBeforeOffsetsType0
    from ..models.application_response_startpoints_item import ApplicationResponseStartpointsItem


T = TypeVar("T", bound="ApplicationResponse")


@_attrs_define
class ApplicationResponse:
    """
    Attributes:
        id (int):
        run_id (int):
        attempt (int):
        query (str):
        source (str):
        startpoints (list[ApplicationResponseStartpointsItem]):
        batch_id (int | None):
        before_offsets (ApplicationResponseBeforeOffsetsType0 | None):
        after_offsets (ApplicationResponseAfterOffsets):
        applied_at (datetime.datetime):
        committed_at (datetime.datetime | None):
        reverted_at (datetime.datetime | None):
        reverted_by (None | str):
    """

    id: int
    run_id: int
    attempt: int
    query: str
    source: str
    startpoints: list[ApplicationResponseStartpointsItem]
    batch_id: int | None
    before_offsets: ApplicationResponseBeforeOffsetsType0 | None
    after_offsets: ApplicationResponseAfterOffsets
    applied_at: datetime.datetime
    committed_at: datetime.datetime | None
    reverted_at: datetime.datetime | None
    reverted_by: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.application_response_before_offsets_type_0 import ApplicationResponseBeforeOffsetsType0  # noqa: PLC0415

        id = self.id

        run_id = self.run_id

        attempt = self.attempt

        query = self.query

        source = self.source

        startpoints = []
        for startpoints_item_data in self.startpoints:
            startpoints_item = startpoints_item_data.to_dict()
            startpoints.append(startpoints_item)

        batch_id: int | None
        batch_id = self.batch_id

        before_offsets: dict[str, Any] | None
        if isinstance(self.before_offsets, ApplicationResponseBeforeOffsetsType0):
            before_offsets = self.before_offsets.to_dict()
        else:
            before_offsets = self.before_offsets

        after_offsets = self.after_offsets.to_dict()

        applied_at = self.applied_at.isoformat()

        committed_at: None | str
        if isinstance(self.committed_at, datetime.datetime):
            committed_at = self.committed_at.isoformat()
        else:
            committed_at = self.committed_at

        reverted_at: None | str
        if isinstance(self.reverted_at, datetime.datetime):
            reverted_at = self.reverted_at.isoformat()
        else:
            reverted_at = self.reverted_at

        reverted_by: None | str
        reverted_by = self.reverted_by

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "run_id": run_id,
                "attempt": attempt,
                "query": query,
                "source": source,
                "startpoints": startpoints,
                "batch_id": batch_id,
                "before_offsets": before_offsets,
                "after_offsets": after_offsets,
                "applied_at": applied_at,
                "committed_at": committed_at,
                "reverted_at": reverted_at,
                "reverted_by": reverted_by,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.application_response_after_offsets import ApplicationResponseAfterOffsets  # noqa: PLC0415
        from ..models.application_response_before_offsets_type_0 import ApplicationResponseBeforeOffsetsType0  # noqa: PLC0415
        from ..models.application_response_startpoints_item import ApplicationResponseStartpointsItem  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        run_id = d.pop("run_id")

        attempt = d.pop("attempt")

        query = d.pop("query")

        source = d.pop("source")

        startpoints = []
        _startpoints = d.pop("startpoints")
        for startpoints_item_data in _startpoints:
            startpoints_item = ApplicationResponseStartpointsItem.from_dict(startpoints_item_data)

            startpoints.append(startpoints_item)

        def _parse_batch_id(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        batch_id = _parse_batch_id(d.pop("batch_id"))

        def _parse_before_offsets(data: object) -> ApplicationResponseBeforeOffsetsType0 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                before_offsets_type_0 = ApplicationResponseBeforeOffsetsType0.from_dict(data)

                return before_offsets_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ApplicationResponseBeforeOffsetsType0 | None, data)

        before_offsets = _parse_before_offsets(d.pop("before_offsets"))

        after_offsets = ApplicationResponseAfterOffsets.from_dict(d.pop("after_offsets"))

        applied_at = datetime.datetime.fromisoformat(d.pop("applied_at"))

        def _parse_committed_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                committed_at_type_0 = datetime.datetime.fromisoformat(data)

                return committed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        committed_at = _parse_committed_at(d.pop("committed_at"))

        def _parse_reverted_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                reverted_at_type_0 = datetime.datetime.fromisoformat(data)

                return reverted_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        reverted_at = _parse_reverted_at(d.pop("reverted_at"))

        def _parse_reverted_by(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        reverted_by = _parse_reverted_by(d.pop("reverted_by"))

        application_response = cls(
            id=id,
            run_id=run_id,
            attempt=attempt,
            query=query,
            source=source,
            startpoints=startpoints,
            batch_id=batch_id,
            before_offsets=before_offsets,
            after_offsets=after_offsets,
            applied_at=applied_at,
            committed_at=committed_at,
            reverted_at=reverted_at,
            reverted_by=reverted_by,
        )

        application_response.additional_properties = d
        return application_response

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
