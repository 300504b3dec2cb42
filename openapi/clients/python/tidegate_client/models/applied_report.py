from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.applied_report_after import AppliedReportAfter
    from ..models.applied_report_before_type_0 import AppliedReportBeforeType0


T = TypeVar("T", bound="AppliedReport")


@_attrs_define
class AppliedReport:
    """What the runtime applied for one source of one query.

    Attributes:
        query (str):
        source (str):
        startpoint_ids (list[int]):
        after (AppliedReportAfter):
        checkpoint (None | str | Unset):
        batch_id (int | None | Unset):
        before (AppliedReportBeforeType0 | None | Unset):
        original_file (None | str | Unset):
    """

    query: str
    source: str
    startpoint_ids: list[int]
    after: AppliedReportAfter
    checkpoint: None | str | Unset = UNSET
    batch_id: int | None | Unset = UNSET
    before: AppliedReportBeforeType0 | None | Unset = UNSET
    original_file: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.applied_report_before_type_0 import AppliedReportBeforeType0  # noqa: PLC0415

        query = self.query

        source = self.source

        startpoint_ids = self.startpoint_ids

        after = self.after.to_dict()

        checkpoint: None | str | Unset
        if isinstance(self.checkpoint, Unset):
            checkpoint = UNSET
        else:
            checkpoint = self.checkpoint

        batch_id: int | None | Unset
        if isinstance(self.batch_id, Unset):
            batch_id = UNSET
        else:
            batch_id = self.batch_id

        before: dict[str, Any] | None | Unset
        if isinstance(self.before, Unset):
            before = UNSET
        elif isinstance(self.before, AppliedReportBeforeType0):
            before = self.before.to_dict()
        else:
            before = self.before

        original_file: None | str | Unset
        if isinstance(self.original_file, Unset):
            original_file = UNSET
        else:
            original_file = self.original_file

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "query": query,
                "source": source,
                "startpoint_ids": startpoint_ids,
                "after": after,
            }
        )
        if checkpoint is not UNSET:
            field_dict["checkpoint"] = checkpoint
        if batch_id is not UNSET:
            field_dict["batch_id"] = batch_id
        if before is not UNSET:
            field_dict["before"] = before
        if original_file is not UNSET:
            field_dict["original_file"] = original_file

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.applied_report_after import AppliedReportAfter  # noqa: PLC0415
        from ..models.applied_report_before_type_0 import AppliedReportBeforeType0  # noqa: PLC0415

        d = dict(src_dict)
        query = d.pop("query")

        source = d.pop("source")

        startpoint_ids = cast(list[int], d.pop("startpoint_ids"))

        after = AppliedReportAfter.from_dict(d.pop("after"))

        def _parse_checkpoint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        checkpoint = _parse_checkpoint(d.pop("checkpoint", UNSET))

        def _parse_batch_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        batch_id = _parse_batch_id(d.pop("batch_id", UNSET))

        def _parse_before(data: object) -> AppliedReportBeforeType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                before_type_0 = AppliedReportBeforeType0.from_dict(data)

                return before_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AppliedReportBeforeType0 | None | Unset, data)

        before = _parse_before(d.pop("before", UNSET))

        def _parse_original_file(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        original_file = _parse_original_file(d.pop("original_file", UNSET))

        applied_report = cls(
            query=query,
            source=source,
            startpoint_ids=startpoint_ids,
            after=after,
            checkpoint=checkpoint,
            batch_id=batch_id,
            before=before,
            original_file=original_file,
        )

        return applied_report
