from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ProblemResponse")


@_attrs_define
class ProblemResponse:
    """
    Attributes:
        query (str):
        kind (str): renamed, operator_kind, operator_count, key_schema, value_schema, state_partitions,
            state_store_provider, missing_query, unsupported, sink_log (a declared file sink's log lacks the batches its
            next compaction reads), sink_ahead (a declared file sink holds batches past the one the query resumes at)
        detail (str):
        operator (int | None | Unset):
        expected (Any | Unset):
        actual (Any | Unset):
    """

    query: str
    kind: str
    detail: str
    operator: int | None | Unset = UNSET
    expected: Any | Unset = UNSET
    actual: Any | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        query = self.query

        kind = self.kind

        detail = self.detail

        operator: int | None | Unset
        if isinstance(self.operator, Unset):
            operator = UNSET
        else:
            operator = self.operator

        expected = self.expected

        actual = self.actual

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "query": query,
                "kind": kind,
                "detail": detail,
            }
        )
        if operator is not UNSET:
            field_dict["operator"] = operator
        if expected is not UNSET:
            field_dict["expected"] = expected
        if actual is not UNSET:
            field_dict["actual"] = actual

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        query = d.pop("query")

        kind = d.pop("kind")

        detail = d.pop("detail")

        def _parse_operator(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        operator = _parse_operator(d.pop("operator", UNSET))

        expected = d.pop("expected", UNSET)

        actual = d.pop("actual", UNSET)

        problem_response = cls(
            query=query,
            kind=kind,
            detail=detail,
            operator=operator,
            expected=expected,
            actual=actual,
        )

        problem_response.additional_properties = d
        return problem_response

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
