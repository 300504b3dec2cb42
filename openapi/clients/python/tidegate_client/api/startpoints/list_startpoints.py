from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.startpoints_view import StartpointsView
from ...types import UNSET, Response, Unset


def _get_kwargs(
    job: str,
    *,
    limit: int | Unset = 500,
    cursor: None | str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

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
        "url": "/api/v1/jobs/{job}/startpoints".format(
            job=quote(str(job), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | StartpointsView | None:
    if response.status_code == 200:
        response_200 = StartpointsView.from_dict(response.json())

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
) -> Response[Problem | StartpointsView]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    job: str,
    *,
    client: AuthenticatedClient,
    limit: int | Unset = 500,
    cursor: None | str | Unset = UNSET,
) -> Response[Problem | StartpointsView]:
    """Startpoints.List

    Args:
        job (str): The job's name.
        limit (int | Unset): Pending startpoints per page (1 to 500). Default: 500.
        cursor (None | str | Unset): next_cursor from the previous page.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StartpointsView]
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
    job: str,
    *,
    client: AuthenticatedClient,
    limit: int | Unset = 500,
    cursor: None | str | Unset = UNSET,
) -> Problem | StartpointsView | None:
    """Startpoints.List

    Args:
        job (str): The job's name.
        limit (int | Unset): Pending startpoints per page (1 to 500). Default: 500.
        cursor (None | str | Unset): next_cursor from the previous page.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StartpointsView
    """

    return sync_detailed(
        job=job,
        client=client,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    job: str,
    *,
    client: AuthenticatedClient,
    limit: int | Unset = 500,
    cursor: None | str | Unset = UNSET,
) -> Response[Problem | StartpointsView]:
    """Startpoints.List

    Args:
        job (str): The job's name.
        limit (int | Unset): Pending startpoints per page (1 to 500). Default: 500.
        cursor (None | str | Unset): next_cursor from the previous page.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StartpointsView]
    """

    kwargs = _get_kwargs(
        job=job,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    job: str,
    *,
    client: AuthenticatedClient,
    limit: int | Unset = 500,
    cursor: None | str | Unset = UNSET,
) -> Problem | StartpointsView | None:
    """Startpoints.List

    Args:
        job (str): The job's name.
        limit (int | Unset): Pending startpoints per page (1 to 500). Default: 500.
        cursor (None | str | Unset): next_cursor from the previous page.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StartpointsView
    """

    return (
        await asyncio_detailed(
            job=job,
            client=client,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
