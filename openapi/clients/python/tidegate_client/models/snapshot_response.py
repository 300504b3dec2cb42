from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.snapshot_response_state import SnapshotResponseState

if TYPE_CHECKING:
    from ..models.query_snapshot import QuerySnapshot
    from ..models.snapshot_use_response import SnapshotUseResponse


T = TypeVar("T", bound="SnapshotResponse")


@_attrs_define
class SnapshotResponse:
    """
    Attributes:
        job (str):
        name (str):
        state (SnapshotResponseState): Only a ready snapshot can be started from.
        created_at (datetime.datetime): When the export was requested (hz-cli's TIME).
        completed_at (datetime.datetime | None):
        size_bytes (int): Bytes of checkpoint files the snapshot holds.
        bytes_written (int): Bytes this export wrote; the rest was already stored by earlier snapshots.
        file_count (int):
        run_id (int | None): The run it was exported from.
        version (int | None): The version that run ran.
        stop (bool): Exported with stop: the run ended at the snapshot.
        queries (list[QuerySnapshot]):
        started_runs (list[SnapshotUseResponse]): Runs started from it.
        operation_id (int | None):
        error (None | str):
        manifest (None | str): Where its manifest is in the snapshot store.
    """

    job: str
    name: str
    state: SnapshotResponseState
    created_at: datetime.datetime
    completed_at: datetime.datetime | None
    size_bytes: int
    bytes_written: int
    file_count: int
    run_id: int | None
    version: int | None
    stop: bool
    queries: list[QuerySnapshot]
    started_runs: list[SnapshotUseResponse]
    operation_id: int | None
    error: None | str
    manifest: None | str
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

        queries = []
        for queries_item_data in self.queries:
            queries_item = queries_item_data.to_dict()
            queries.append(queries_item)

        started_runs = []
        for started_runs_item_data in self.started_runs:
            started_runs_item = started_runs_item_data.to_dict()
            started_runs.append(started_runs_item)

        operation_id: int | None
        operation_id = self.operation_id

        error: None | str
        error = self.error

        manifest: None | str
        manifest = self.manifest

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
                "queries": queries,
                "started_runs": started_runs,
                "operation_id": operation_id,
                "error": error,
                "manifest": manifest,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.query_snapshot import QuerySnapshot  # noqa: PLC0415
        from ..models.snapshot_use_response import SnapshotUseResponse  # noqa: PLC0415

        d = dict(src_dict)
        job = d.pop("job")

        name = d.pop("name")

        state = SnapshotResponseState(d.pop("state"))

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

        queries = []
        _queries = d.pop("queries")
        for queries_item_data in _queries:
            queries_item = QuerySnapshot.from_dict(queries_item_data)

            queries.append(queries_item)

        started_runs = []
        _started_runs = d.pop("started_runs")
        for started_runs_item_data in _started_runs:
            started_runs_item = SnapshotUseResponse.from_dict(started_runs_item_data)

            started_runs.append(started_runs_item)

        def _parse_operation_id(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        operation_id = _parse_operation_id(d.pop("operation_id"))

        def _parse_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        error = _parse_error(d.pop("error"))

        def _parse_manifest(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        manifest = _parse_manifest(d.pop("manifest"))

        snapshot_response = cls(
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
            queries=queries,
            started_runs=started_runs,
            operation_id=operation_id,
            error=error,
            manifest=manifest,
        )

        snapshot_response.additional_properties = d
        return snapshot_response

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
