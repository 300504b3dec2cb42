from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.update_body_strategy import UpdateBodyStrategy
from ..types import UNSET, Unset

T = TypeVar("T", bound="UpdateBody")


@_attrs_define
class UpdateBody:
    """
    Attributes:
        version (int): The version to run next.
        strategy (UpdateBodyStrategy | Unset): snapshot: save a snapshot (stop), start the new version from it, roll
            back to the old version from the same snapshot if the new one fails to start. drain: for an incompatible change
            (state or intermediate schema): drain the old run (all input up to fixed end offsets, every window flushed),
            then start the new version on fresh checkpoints exactly at the drained offsets; nothing lost, nothing twice.
            stateless: for a running version without state: stop it at a batch boundary, start the new version on fresh
            checkpoints exactly where it stopped (refused with 422 when the running version declares stateful operators).
            Default: UpdateBodyStrategy.SNAPSHOT.
        snapshot_name (None | str | Unset): Name of the snapshot the update saves; default update-v<old>-v<new>-<time>.
        dry_run (bool | Unset): strategy snapshot: before the old run is stopped, run the new version's app against a
            scratch copy of the state it would resume (noop sinks, one empty batch): Spark checks the state schemas and
            stateful operators as a real restart would, which catches app changes the declarations do not show (an avg for a
            sum, a session window for a tumbling one, another grouping key). Only when a resumed query holds state. false:
            skip it (the declared checks still apply). Strategies drain and stateless: before the old run drains or stops,
            the new version runs one trial batch over the last 200 records per partition the old run committed (scratch
            checkpoints, noop sinks; pre-warmed, in its standby), so a version whose code fails on real records is refused;
            false: skip it. Default: True.
        dry_run_timeout_seconds (int | None | Unset): How long the dry run may take, driver start included (default
            300); past it the request is refused and nothing was touched.
        timeout_seconds (int | None | Unset): snapshot, stateless: how long to wait for the old run's graceful stop
            (default 120). drain: how long the drain may take (default 1800); a drain still running then is stopped at a
            batch boundary and the old version started again from its checkpoint.
        prewarm (bool | None | Unset): Default: the job's prewarm (true unless set otherwise). Start the new version's
            driver while the old run still processes: it builds its session and starts Python, then waits as a standby (run
            state standby) until the old run has ended and its checkpoints are in place, and starts its queries the moment
            it is told to go. The output then stands still for the stop and the first batch only, not for a driver's start.
            It needs room for one more driver on the cluster (a queued standby waits there, the old run processing on).
            false: the cold path, one driver at a time.
        verify_seconds (int | Unset): After the new run starts, how long it must keep running before the update counts
            as done; besides, every query must commit its first batch past the one it was restored at (a fresh query: batch
            0), or report itself idle when it has no new input, within first_batch_seconds. A failure or neither in time
            rolls back. 0: only check that it started. Default: 20.
        first_batch_seconds (int | None | Unset): How long every query of the new run has to commit its first batch past
            the restored one, or (with no new input) report Spark's idle event (default 600); a query that does neither in
            time rolls the update back.
    """

    version: int
    strategy: UpdateBodyStrategy | Unset = UpdateBodyStrategy.SNAPSHOT
    snapshot_name: None | str | Unset = UNSET
    dry_run: bool | Unset = True
    dry_run_timeout_seconds: int | None | Unset = UNSET
    timeout_seconds: int | None | Unset = UNSET
    prewarm: bool | None | Unset = UNSET
    verify_seconds: int | Unset = 20
    first_batch_seconds: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        version = self.version

        strategy: str | Unset = UNSET
        if not isinstance(self.strategy, Unset):
            strategy = self.strategy.value

        snapshot_name: None | str | Unset
        if isinstance(self.snapshot_name, Unset):
            snapshot_name = UNSET
        else:
            snapshot_name = self.snapshot_name

        dry_run = self.dry_run

        dry_run_timeout_seconds: int | None | Unset
        if isinstance(self.dry_run_timeout_seconds, Unset):
            dry_run_timeout_seconds = UNSET
        else:
            dry_run_timeout_seconds = self.dry_run_timeout_seconds

        timeout_seconds: int | None | Unset
        if isinstance(self.timeout_seconds, Unset):
            timeout_seconds = UNSET
        else:
            timeout_seconds = self.timeout_seconds

        prewarm: bool | None | Unset
        if isinstance(self.prewarm, Unset):
            prewarm = UNSET
        else:
            prewarm = self.prewarm

        verify_seconds = self.verify_seconds

        first_batch_seconds: int | None | Unset
        if isinstance(self.first_batch_seconds, Unset):
            first_batch_seconds = UNSET
        else:
            first_batch_seconds = self.first_batch_seconds

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "version": version,
            }
        )
        if strategy is not UNSET:
            field_dict["strategy"] = strategy
        if snapshot_name is not UNSET:
            field_dict["snapshot_name"] = snapshot_name
        if dry_run is not UNSET:
            field_dict["dry_run"] = dry_run
        if dry_run_timeout_seconds is not UNSET:
            field_dict["dry_run_timeout_seconds"] = dry_run_timeout_seconds
        if timeout_seconds is not UNSET:
            field_dict["timeout_seconds"] = timeout_seconds
        if prewarm is not UNSET:
            field_dict["prewarm"] = prewarm
        if verify_seconds is not UNSET:
            field_dict["verify_seconds"] = verify_seconds
        if first_batch_seconds is not UNSET:
            field_dict["first_batch_seconds"] = first_batch_seconds

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        version = d.pop("version")

        _strategy = d.pop("strategy", UNSET)
        strategy: UpdateBodyStrategy | Unset
        if isinstance(_strategy, Unset):
            strategy = UNSET
        else:
            strategy = UpdateBodyStrategy(_strategy)

        def _parse_snapshot_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        snapshot_name = _parse_snapshot_name(d.pop("snapshot_name", UNSET))

        dry_run = d.pop("dry_run", UNSET)

        def _parse_dry_run_timeout_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        dry_run_timeout_seconds = _parse_dry_run_timeout_seconds(d.pop("dry_run_timeout_seconds", UNSET))

        def _parse_timeout_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        timeout_seconds = _parse_timeout_seconds(d.pop("timeout_seconds", UNSET))

        def _parse_prewarm(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        prewarm = _parse_prewarm(d.pop("prewarm", UNSET))

        verify_seconds = d.pop("verify_seconds", UNSET)

        def _parse_first_batch_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        first_batch_seconds = _parse_first_batch_seconds(d.pop("first_batch_seconds", UNSET))

        update_body = cls(
            version=version,
            strategy=strategy,
            snapshot_name=snapshot_name,
            dry_run=dry_run,
            dry_run_timeout_seconds=dry_run_timeout_seconds,
            timeout_seconds=timeout_seconds,
            prewarm=prewarm,
            verify_seconds=verify_seconds,
            first_batch_seconds=first_batch_seconds,
        )

        return update_body
