from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.page_snapshot_summary import PageSnapshotSummary
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    job: None | str | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: None | str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_job: None | str | Unset
    if isinstance(job, Unset):
        json_job = UNSET
    else:
        json_job = job
    params["job"] = json_job

    params["limit"] = limit

    json_cursor: None | str | Unset
    if isinstance(cursor, Unset):
        json_cursor = UNSET
    else:
        json_cursor = cursor
    params["cursor"] = json_cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/snapshots",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> PageSnapshotSummary | Problem | None:
    if response.status_code == 200:
        response_200 = PageSnapshotSummary.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[PageSnapshotSummary | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    job: None | str | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: None | str | Unset = UNSET,
) -> Response[PageSnapshotSummary | Problem]:
    """Snapshot.List

     hz-cli list-snapshots: TIME, SIZE, JOB, SNAPSHOT; newest first.

    Args:
        job (None | str | Unset): Only this job's.
        limit (int | Unset): Page size (1 to 500). Default: 50.
        cursor (None | str | Unset): next_cursor from the previous page.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PageSnapshotSummary | Problem]
    """

    kwargs = _get_kwargs(
        job=job,
        limit=limit,
        cursor=cursor,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    job: None | str | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: None | str | Unset = UNSET,
) -> PageSnapshotSummary | Problem | None:
    """Snapshot.List

     hz-cli list-snapshots: TIME, SIZE, JOB, SNAPSHOT; newest first.

    Args:
        job (None | str | Unset): Only this job's.
        limit (int | Unset): Page size (1 to 500). Default: 50.
        cursor (None | str | Unset): next_cursor from the previous page.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PageSnapshotSummary | Problem
    """

    return sync_detailed(
        client=client,
        job=job,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    job: None | str | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: None | str | Unset = UNSET,
) -> Response[PageSnapshotSummary | Problem]:
    """Snapshot.List

     hz-cli list-snapshots: TIME, SIZE, JOB, SNAPSHOT; newest first.

    Args:
        job (None | str | Unset): Only this job's.
        limit (int | Unset): Page size (1 to 500). Default: 50.
        cursor (None | str | Unset): next_cursor from the previous page.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PageSnapshotSummary | Problem]
    """

    kwargs = _get_kwargs(
        job=job,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    job: None | str | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: None | str | Unset = UNSET,
) -> PageSnapshotSummary | Problem | None:
    """Snapshot.List

     hz-cli list-snapshots: TIME, SIZE, JOB, SNAPSHOT; newest first.

    Args:
        job (None | str | Unset): Only this job's.
        limit (int | Unset): Page size (1 to 500). Default: 50.
        cursor (None | str | Unset): next_cursor from the previous page.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PageSnapshotSummary | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            job=job,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
