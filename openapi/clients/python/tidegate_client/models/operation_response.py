from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.operation_response_kind import OperationResponseKind
from ..models.operation_response_state import OperationResponseState

if TYPE_CHECKING:
    from ..models.operation_response_params import OperationResponseParams
    from ..models.operation_response_result_type_0 import OperationResponseResultType0
    from ..models.step import Step


T = TypeVar("T", bound="OperationResponse")


@_attrs_define
class OperationResponse:
    """
    Attributes:
        id (int):
        job (str):
        kind (OperationResponseKind):
        state (OperationResponseState):
        params (OperationResponseParams):
        run_id (int | None):
        steps (list[Step]): Steps done so far, in order.
        error (None | str):
        result (None | OperationResponseResultType0): Once finished, the outcome. While running, how far it got: a
            drain's backlog per query; a snapshot export's bytes_total, bytes_copied, files_total and files_copied (updated
            as it copies, about twice a second).
        idempotency_key (None | str):
        created_by (str):
        created_at (datetime.datetime):
        started_at (datetime.datetime | None):
        finished_at (datetime.datetime | None):
    """

    id: int
    job: str
    kind: OperationResponseKind
    state: OperationResponseState
    params: OperationResponseParams
    run_id: int | None
    steps: list[Step]
    error: None | str
    result: None | OperationResponseResultType0
    idempotency_key: None | str
    created_by: str
    created_at: datetime.datetime
    started_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.operation_response_result_type_0 import OperationResponseResultType0  # noqa: PLC0415

        id = self.id

        job = self.job

        kind = self.kind.value

        state = self.state.value

        params = self.params.to_dict()

        run_id: int | None
        run_id = self.run_id

        steps = []
        for steps_item_data in self.steps:
            steps_item = steps_item_data.to_dict()
            steps.append(steps_item)

        error: None | str
        error = self.error

        result: dict[str, Any] | None
        if isinstance(self.result, OperationResponseResultType0):
            result = self.result.to_dict()
        else:
            result = self.result

        idempotency_key: None | str
        idempotency_key = self.idempotency_key

        created_by = self.created_by

        created_at = self.created_at.isoformat()

        started_at: None | str
        if isinstance(self.started_at, datetime.datetime):
            started_at = self.started_at.isoformat()
        else:
            started_at = self.started_at

        finished_at: None | str
        if isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "job": job,
                "kind": kind,
                "state": state,
                "params": params,
                "run_id": run_id,
                "steps": steps,
                "error": error,
                "result": result,
                "idempotency_key": idempotency_key,
                "created_by": created_by,
                "created_at": created_at,
                "started_at": started_at,
                "finished_at": finished_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.operation_response_params import OperationResponseParams  # noqa: PLC0415
        from ..models.operation_response_result_type_0 import OperationResponseResultType0  # noqa: PLC0415
        from ..models.step import Step  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        job = d.pop("job")

        kind = OperationResponseKind(d.pop("kind"))

        state = OperationResponseState(d.pop("state"))

        params = OperationResponseParams.from_dict(d.pop("params"))

        def _parse_run_id(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        run_id = _parse_run_id(d.pop("run_id"))

        steps = []
        _steps = d.pop("steps")
        for steps_item_data in _steps:
            steps_item = Step.from_dict(steps_item_data)

            steps.append(steps_item)

        def _parse_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        error = _parse_error(d.pop("error"))

        def _parse_result(data: object) -> None | OperationResponseResultType0:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                result_type_0 = OperationResponseResultType0.from_dict(data)

                return result_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OperationResponseResultType0, data)

        result = _parse_result(d.pop("result"))

        def _parse_idempotency_key(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotency_key"))

        created_by = d.pop("created_by")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_started_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                started_at_type_0 = datetime.datetime.fromisoformat(data)

                return started_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        started_at = _parse_started_at(d.pop("started_at"))

        def _parse_finished_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        finished_at = _parse_finished_at(d.pop("finished_at"))

        operation_response = cls(
            id=id,
            job=job,
            kind=kind,
            state=state,
            params=params,
            run_id=run_id,
            steps=steps,
            error=error,
            result=result,
            idempotency_key=idempotency_key,
            created_by=created_by,
            created_at=created_at,
            started_at=started_at,
            finished_at=finished_at,
        )

        operation_response.additional_properties = d
        return operation_response

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
