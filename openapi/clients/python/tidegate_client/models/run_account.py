from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.query_account import QueryAccount


T = TypeVar("T", bound="RunAccount")


@_attrs_define
class RunAccount:
    """``tidegate verify``: what a run read against what its queries counted in and dropped.

    Attributes:
        run_id (int):
        job (str):
        queries (list[QueryAccount]):
        complete (bool): Every batch checked, every record read counted in, none dropped as late.
        verdict (str): The same, said for a person.
    """

    run_id: int
    job: str
    queries: list[QueryAccount]
    complete: bool
    verdict: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        run_id = self.run_id

        job = self.job

        queries = []
        for queries_item_data in self.queries:
            queries_item = queries_item_data.to_dict()
            queries.append(queries_item)

        complete = self.complete

        verdict = self.verdict

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "run_id": run_id,
                "job": job,
                "queries": queries,
                "complete": complete,
                "verdict": verdict,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.query_account import QueryAccount  # noqa: PLC0415

        d = dict(src_dict)
        run_id = d.pop("run_id")

        job = d.pop("job")

        queries = []
        _queries = d.pop("queries")
        for queries_item_data in _queries:
            queries_item = QueryAccount.from_dict(queries_item_data)

            queries.append(queries_item)

        complete = d.pop("complete")

        verdict = d.pop("verdict")

        run_account = cls(
            run_id=run_id,
            job=job,
            queries=queries,
            complete=complete,
            verdict=verdict,
        )

        run_account.additional_properties = d
        return run_account

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
