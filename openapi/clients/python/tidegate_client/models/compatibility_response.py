from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.problem_response import ProblemResponse
    from ..models.query_outcome import QueryOutcome


T = TypeVar("T", bound="CompatibilityResponse")


@_attrs_define
class CompatibilityResponse:
    """
    Attributes:
        compatible (bool):
        version (int):
        queries (list[QueryOutcome]):
        resume (list[str]):
        initialize (list[str]):
        dropped (list[str]): Snapshot queries the version does not have.
        problems (list[ProblemResponse]):
    """

    compatible: bool
    version: int
    queries: list[QueryOutcome]
    resume: list[str]
    initialize: list[str]
    dropped: list[str]
    problems: list[ProblemResponse]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        compatible = self.compatible

        version = self.version

        queries = []
        for queries_item_data in self.queries:
            queries_item = queries_item_data.to_dict()
            queries.append(queries_item)

        resume = self.resume

        initialize = self.initialize

        dropped = self.dropped

        problems = []
        for problems_item_data in self.problems:
            problems_item = problems_item_data.to_dict()
            problems.append(problems_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "compatible": compatible,
                "version": version,
                "queries": queries,
                "resume": resume,
                "initialize": initialize,
                "dropped": dropped,
                "problems": problems,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.problem_response import ProblemResponse  # noqa: PLC0415
        from ..models.query_outcome import QueryOutcome  # noqa: PLC0415

        d = dict(src_dict)
        compatible = d.pop("compatible")

        version = d.pop("version")

        queries = []
        _queries = d.pop("queries")
        for queries_item_data in _queries:
            queries_item = QueryOutcome.from_dict(queries_item_data)

            queries.append(queries_item)

        resume = cast(list[str], d.pop("resume"))

        initialize = cast(list[str], d.pop("initialize"))

        dropped = cast(list[str], d.pop("dropped"))

        problems = []
        _problems = d.pop("problems")
        for problems_item_data in _problems:
            problems_item = ProblemResponse.from_dict(problems_item_data)

            problems.append(problems_item)

        compatibility_response = cls(
            compatible=compatible,
            version=version,
            queries=queries,
            resume=resume,
            initialize=initialize,
            dropped=dropped,
            problems=problems,
        )

        compatibility_response.additional_properties = d
        return compatibility_response

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
