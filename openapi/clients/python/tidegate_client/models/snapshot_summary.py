from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.snapshot_summary_state import SnapshotSummaryState

T = TypeVar("T", bound="SnapshotSummary")


@_attrs_define
class SnapshotSummary:
    """
    Attributes:
        job (str):
        name (str):
        state (SnapshotSummaryState): Only a ready snapshot can be started from.
        created_at (datetime.datetime): When the export was requested (hz-cli's TIME).
        completed_at (datetime.datetime | None):
        size_bytes (int): Bytes of checkpoint files the snapshot holds.
        bytes_written (int): Bytes this export wrote; the rest was already stored by earlier snapshots.
        file_count (int):
        run_id (int | None): The run it was exported from.
        version (int | None): The version that run ran.
        stop (bool): Exported with stop: the run ended at the snapshot.
    """

    job: str
    name: str
    state: SnapshotSummaryState
    created_at: datetime.datetime
    completed_at: datetime.datetime | None
    size_bytes: int
    bytes_written: int
    file_count: int
    run_id: int | None
    version: int | None
    stop: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job = self.job

        name = self.name

        state = self.state.value

        created_at = self.created_at.isoformat()

        completed_at: None | str
        if isinstance(self.completed_at, datetime.datetime):
            completed_at = self.completed_at.isoformat()
        else:
            completed_at = self.completed_at

        size_bytes = self.size_bytes

        bytes_written = self.bytes_written

        file_count = self.file_count

        run_id: int | None
        run_id = self.run_id

        version: int | None
        version = self.version

        stop = self.stop

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job": job,
                "name": name,
                "state": state,
                "created_at": created_at,
                "completed_at": completed_at,
                "size_bytes": size_bytes,
                "bytes_written": bytes_written,
                "file_count": file_count,
                "run_id": run_id,
                "version": version,
                "stop": stop,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        job = d.pop("job")

        name = d.pop("name")

        state = SnapshotSummaryState(d.pop("state"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_completed_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                completed_at_type_0 = datetime.datetime.fromisoformat(data)

                return completed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        completed_at = _parse_completed_at(d.pop("completed_at"))

        size_bytes = d.pop("size_bytes")

        bytes_written = d.pop("bytes_written")

        file_count = d.pop("file_count")

        def _parse_run_id(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        run_id = _parse_run_id(d.pop("run_id"))

        def _parse_version(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        version = _parse_version(d.pop("version"))

        stop = d.pop("stop")

        snapshot_summary = cls(
            job=job,
            name=name,
            state=state,
            created_at=created_at,
            completed_at=completed_at,
            size_bytes=size_bytes,
            bytes_written=bytes_written,
            file_count=file_count,
            run_id=run_id,
            version=version,
            stop=stop,
        )

        snapshot_summary.additional_properties = d
        return snapshot_summary

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
