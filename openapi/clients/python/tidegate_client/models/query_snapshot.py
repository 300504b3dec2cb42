from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.operator_info import OperatorInfo
    from ..models.query_snapshot_declared_operators_item import QuerySnapshotDeclaredOperatorsItem
    from ..models.query_snapshot_offsets import QuerySnapshotOffsets


T = TypeVar("T", bound="QuerySnapshot")


@_attrs_define
class QuerySnapshot:
    """
    Attributes:
        query (str):
        batch_id (int | None): The committed batch; null: nothing committed.
        offsets (QuerySnapshotOffsets): Source name -> offsets of that batch.
        watermark_ms (int | None):
        next_watermark_ms (int | None):
        operators (list[OperatorInfo]):
        declared_operators (list[QuerySnapshotDeclaredOperatorsItem]):
        files (int):
        size_bytes (int):
    """

    query: str
    batch_id: int | None
    offsets: QuerySnapshotOffsets
    watermark_ms: int | None
    next_watermark_ms: int | None
    operators: list[OperatorInfo]
    declared_operators: list[QuerySnapshotDeclaredOperatorsItem]
    files: int
    size_bytes: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        query = self.query

        batch_id: int | None
        batch_id = self.batch_id

        offsets = self.offsets.to_dict()

        watermark_ms: int | None
        watermark_ms = self.watermark_ms

        next_watermark_ms: int | None
        next_watermark_ms = self.next_watermark_ms

        operators = []
        for operators_item_data in self.operators:
            operators_item = operators_item_data.to_dict()
            operators.append(operators_item)

        declared_operators = []
        for declared_operators_item_data in self.declared_operators:
            declared_operators_item = declared_operators_item_data.to_dict()
            declared_operators.append(declared_operators_item)

        files = self.files

        size_bytes = self.size_bytes

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "query": query,
                "batch_id": batch_id,
                "offsets": offsets,
                "watermark_ms": watermark_ms,
                "next_watermark_ms": next_watermark_ms,
                "operators": operators,
                "declared_operators": declared_operators,
                "files": files,
                "size_bytes": size_bytes,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.operator_info import OperatorInfo  # noqa: PLC0415
        from ..models.query_snapshot_declared_operators_item import QuerySnapshotDeclaredOperatorsItem  # noqa: PLC0415
        from ..models.query_snapshot_offsets import QuerySnapshotOffsets  # noqa: PLC0415

        d = dict(src_dict)
        query = d.pop("query")

        def _parse_batch_id(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        batch_id = _parse_batch_id(d.pop("batch_id"))

        offsets = QuerySnapshotOffsets.from_dict(d.pop("offsets"))

        def _parse_watermark_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        watermark_ms = _parse_watermark_ms(d.pop("watermark_ms"))

        def _parse_next_watermark_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        next_watermark_ms = _parse_next_watermark_ms(d.pop("next_watermark_ms"))

        operators = []
        _operators = d.pop("operators")
        for operators_item_data in _operators:
            operators_item = OperatorInfo.from_dict(operators_item_data)

            operators.append(operators_item)

        declared_operators = []
        _declared_operators = d.pop("declared_operators")
        for declared_operators_item_data in _declared_operators:
            declared_operators_item = QuerySnapshotDeclaredOperatorsItem.from_dict(declared_operators_item_data)

            declared_operators.append(declared_operators_item)

        files = d.pop("files")

        size_bytes = d.pop("size_bytes")

        query_snapshot = cls(
            query=query,
            batch_id=batch_id,
            offsets=offsets,
            watermark_ms=watermark_ms,
            next_watermark_ms=next_watermark_ms,
            operators=operators,
            declared_operators=declared_operators,
            files=files,
            size_bytes=size_bytes,
        )

        query_snapshot.additional_properties = d
        return query_snapshot

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
