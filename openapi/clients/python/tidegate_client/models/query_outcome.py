from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.query_outcome_outcome import QueryOutcomeOutcome
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.query_outcome_source_type_0 import QueryOutcomeSourceType0


T = TypeVar("T", bound="QueryOutcome")


@_attrs_define
class QueryOutcome:
    """
    Attributes:
        query (str):
        outcome (QueryOutcomeOutcome):
        source (None | QueryOutcomeSourceType0 | Unset): Where it resumes from (snapshot or run, job, query).
        parts (list[str] | Unset): offsets, state
        detail (None | str | Unset):
    """

    query: str
    outcome: QueryOutcomeOutcome
    source: None | QueryOutcomeSourceType0 | Unset = UNSET
    parts: list[str] | Unset = UNSET
    detail: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.query_outcome_source_type_0 import QueryOutcomeSourceType0  # noqa: PLC0415

        query = self.query

        outcome = self.outcome.value

        source: dict[str, Any] | None | Unset
        if isinstance(self.source, Unset):
            source = UNSET
        elif isinstance(self.source, QueryOutcomeSourceType0):
            source = self.source.to_dict()
        else:
            source = self.source

        parts: list[str] | Unset = UNSET
        if not isinstance(self.parts, Unset):
            parts = self.parts

        detail: None | str | Unset
        if isinstance(self.detail, Unset):
            detail = UNSET
        else:
            detail = self.detail

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "query": query,
                "outcome": outcome,
            }
        )
        if source is not UNSET:
            field_dict["source"] = source
        if parts is not UNSET:
            field_dict["parts"] = parts
        if detail is not UNSET:
            field_dict["detail"] = detail

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.query_outcome_source_type_0 import QueryOutcomeSourceType0  # noqa: PLC0415

        d = dict(src_dict)
        query = d.pop("query")

        outcome = QueryOutcomeOutcome(d.pop("outcome"))

        def _parse_source(data: object) -> None | QueryOutcomeSourceType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                source_type_0 = QueryOutcomeSourceType0.from_dict(data)

                return source_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | QueryOutcomeSourceType0 | Unset, data)

        source = _parse_source(d.pop("source", UNSET))

        parts = cast(list[str], d.pop("parts", UNSET))

        def _parse_detail(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        detail = _parse_detail(d.pop("detail", UNSET))

        query_outcome = cls(
            query=query,
            outcome=outcome,
            source=source,
            parts=parts,
            detail=detail,
        )

        query_outcome.additional_properties = d
        return query_outcome

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
