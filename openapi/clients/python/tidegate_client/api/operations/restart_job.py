from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.operation_response import OperationResponse
from ...models.problem import Problem
from ...models.restart_body import RestartBody
from ...types import UNSET, Response, Unset


def _get_kwargs(
    job: str,
    *,
    body: None | RestartBody | Unset = UNSET,
    idempotency_key: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["idempotency-key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/jobs/{job}/restart".format(
            job=quote(str(job), safe=""),
        ),
    }

    if isinstance(body, RestartBody):
        _kwargs["json"] = body.to_dict()
    else:
        _kwargs["json"] = body

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> OperationResponse | Problem | None:
    if response.status_code == 202:
        response_202 = OperationResponse.from_dict(response.json())

        return response_202

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
) -> Response[OperationResponse | Problem]:
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
    body: None | RestartBody | Unset = UNSET,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[OperationResponse | Problem]:
    """Operation.Restart

    Args:
        job (str): The job's name.
        idempotency_key (None | str | Unset): Same key, same operation: a retried request has no
            second effect.
        body (None | RestartBody | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[OperationResponse | Problem]
    """

    kwargs = _get_kwargs(
        job=job,
        body=body,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    job: str,
    *,
    client: AuthenticatedClient,
    body: None | RestartBody | Unset = UNSET,
    idempotency_key: None | str | Unset = UNSET,
) -> OperationResponse | Problem | None:
    """Operation.Restart

    Args:
        job (str): The job's name.
        idempotency_key (None | str | Unset): Same key, same operation: a retried request has no
            second effect.
        body (None | RestartBody | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        OperationResponse | Problem
    """

    return sync_detailed(
        job=job,
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    job: str,
    *,
    client: AuthenticatedClient,
    body: None | RestartBody | Unset = UNSET,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[OperationResponse | Problem]:
    """Operation.Restart

    Args:
        job (str): The job's name.
        idempotency_key (None | str | Unset): Same key, same operation: a retried request has no
            second effect.
        body (None | RestartBody | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[OperationResponse | Problem]
    """

    kwargs = _get_kwargs(
        job=job,
        body=body,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    job: str,
    *,
    client: AuthenticatedClient,
    body: None | RestartBody | Unset = UNSET,
    idempotency_key: None | str | Unset = UNSET,
) -> OperationResponse | Problem | None:
    """Operation.Restart

    Args:
        job (str): The job's name.
        idempotency_key (None | str | Unset): Same key, same operation: a retried request has no
            second effect.
        body (None | RestartBody | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        OperationResponse | Problem
    """

    return (
        await asyncio_detailed(
            job=job,
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
