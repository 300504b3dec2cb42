from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.directives import Directives
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    run_id: int,
    *,
    attempt: int | None | Unset = UNSET,
    wait: int | Unset = 0,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_attempt: int | None | Unset
    if isinstance(attempt, Unset):
        json_attempt = UNSET
    else:
        json_attempt = attempt
    params["attempt"] = json_attempt

    params["wait"] = wait

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/runs/{run_id}/directives".format(
            run_id=quote(str(run_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Directives | Problem | None:
    if response.status_code == 200:
        response_200 = Directives.from_dict(response.json())

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
) -> Response[Directives | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    run_id: int,
    *,
    client: AuthenticatedClient,
    attempt: int | None | Unset = UNSET,
    wait: int | Unset = 0,
) -> Response[Directives | Problem]:
    """Run.Directives

    Args:
        run_id (int):
        attempt (int | None | Unset): The caller's attempt.
        wait (int | Unset): Long-poll: hold the answer up to this many seconds until the run is to
            stop or drain (answered the moment it is). A driver that asks this way between its checks
            sees a stop at once rather than at its next poll. Default: 0.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Directives | Problem]
    """

    kwargs = _get_kwargs(
        run_id=run_id,
        attempt=attempt,
        wait=wait,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    run_id: int,
    *,
    client: AuthenticatedClient,
    attempt: int | None | Unset = UNSET,
    wait: int | Unset = 0,
) -> Directives | Problem | None:
    """Run.Directives

    Args:
        run_id (int):
        attempt (int | None | Unset): The caller's attempt.
        wait (int | Unset): Long-poll: hold the answer up to this many seconds until the run is to
            stop or drain (answered the moment it is). A driver that asks this way between its checks
            sees a stop at once rather than at its next poll. Default: 0.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Directives | Problem
    """

    return sync_detailed(
        run_id=run_id,
        client=client,
        attempt=attempt,
        wait=wait,
    ).parsed


async def asyncio_detailed(
    run_id: int,
    *,
    client: AuthenticatedClient,
    attempt: int | None | Unset = UNSET,
    wait: int | Unset = 0,
) -> Response[Directives | Problem]:
    """Run.Directives

    Args:
        run_id (int):
        attempt (int | None | Unset): The caller's attempt.
        wait (int | Unset): Long-poll: hold the answer up to this many seconds until the run is to
            stop or drain (answered the moment it is). A driver that asks this way between its checks
            sees a stop at once rather than at its next poll. Default: 0.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Directives | Problem]
    """

    kwargs = _get_kwargs(
        run_id=run_id,
        attempt=attempt,
        wait=wait,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    run_id: int,
    *,
    client: AuthenticatedClient,
    attempt: int | None | Unset = UNSET,
    wait: int | Unset = 0,
) -> Directives | Problem | None:
    """Run.Directives

    Args:
        run_id (int):
        attempt (int | None | Unset): The caller's attempt.
        wait (int | Unset): Long-poll: hold the answer up to this many seconds until the run is to
            stop or drain (answered the moment it is). A driver that asks this way between its checks
            sees a stop at once rather than at its next poll. Default: 0.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Directives | Problem
    """

    return (
        await asyncio_detailed(
            run_id=run_id,
            client=client,
            attempt=attempt,
            wait=wait,
        )
    ).parsed
