from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.query_failure_report import QueryFailureReport
from ...types import Response


def _get_kwargs(
    run_id: int,
    *,
    body: QueryFailureReport,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/runs/{run_id}/query-failures".format(
            run_id=quote(str(run_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | Problem | None:
    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | Problem]:
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
    body: QueryFailureReport,
) -> Response[Any | Problem]:
    """Run.Query Failure

     A query failed and the driver restarts it alone after the restart policy's backoff
    (its other queries keep running), or it has used up its restarts and the driver ends.
    Shown on the run as query_restarts.

    Args:
        run_id (int):
        body (QueryFailureReport): A query of the driver failed; the runtime restarts it alone (or
            gives up).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        run_id=run_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    run_id: int,
    *,
    client: AuthenticatedClient,
    body: QueryFailureReport,
) -> Any | Problem | None:
    """Run.Query Failure

     A query failed and the driver restarts it alone after the restart policy's backoff
    (its other queries keep running), or it has used up its restarts and the driver ends.
    Shown on the run as query_restarts.

    Args:
        run_id (int):
        body (QueryFailureReport): A query of the driver failed; the runtime restarts it alone (or
            gives up).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return sync_detailed(
        run_id=run_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    run_id: int,
    *,
    client: AuthenticatedClient,
    body: QueryFailureReport,
) -> Response[Any | Problem]:
    """Run.Query Failure

     A query failed and the driver restarts it alone after the restart policy's backoff
    (its other queries keep running), or it has used up its restarts and the driver ends.
    Shown on the run as query_restarts.

    Args:
        run_id (int):
        body (QueryFailureReport): A query of the driver failed; the runtime restarts it alone (or
            gives up).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        run_id=run_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    run_id: int,
    *,
    client: AuthenticatedClient,
    body: QueryFailureReport,
) -> Any | Problem | None:
    """Run.Query Failure

     A query failed and the driver restarts it alone after the restart policy's backoff
    (its other queries keep running), or it has used up its restarts and the driver ends.
    Shown on the run as query_restarts.

    Args:
        run_id (int):
        body (QueryFailureReport): A query of the driver failed; the runtime restarts it alone (or
            gives up).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return (
        await asyncio_detailed(
            run_id=run_id,
            client=client,
            body=body,
        )
    ).parsed
