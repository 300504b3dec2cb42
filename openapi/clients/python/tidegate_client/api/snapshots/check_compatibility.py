from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.compatibility_body import CompatibilityBody
from ...models.compatibility_response import CompatibilityResponse
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    job: str,
    *,
    body: CompatibilityBody,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/jobs/{job}/compatibility".format(
            job=quote(str(job), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> CompatibilityResponse | Problem | None:
    if response.status_code == 200:
        response_200 = CompatibilityResponse.from_dict(response.json())

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
) -> Response[CompatibilityResponse | Problem]:
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
    body: CompatibilityBody,
) -> Response[CompatibilityResponse | Problem]:
    """Resume Point.Compatibility

     Which queries of the version resume, initialize or are dropped, and every reason it
    cannot start from the snapshot or resume point; nothing is stopped or changed.

    Args:
        job (str): The job's name.
        body (CompatibilityBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CompatibilityResponse | Problem]
    """

    kwargs = _get_kwargs(
        job=job,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    job: str,
    *,
    client: AuthenticatedClient,
    body: CompatibilityBody,
) -> CompatibilityResponse | Problem | None:
    """Resume Point.Compatibility

     Which queries of the version resume, initialize or are dropped, and every reason it
    cannot start from the snapshot or resume point; nothing is stopped or changed.

    Args:
        job (str): The job's name.
        body (CompatibilityBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CompatibilityResponse | Problem
    """

    return sync_detailed(
        job=job,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    job: str,
    *,
    client: AuthenticatedClient,
    body: CompatibilityBody,
) -> Response[CompatibilityResponse | Problem]:
    """Resume Point.Compatibility

     Which queries of the version resume, initialize or are dropped, and every reason it
    cannot start from the snapshot or resume point; nothing is stopped or changed.

    Args:
        job (str): The job's name.
        body (CompatibilityBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CompatibilityResponse | Problem]
    """

    kwargs = _get_kwargs(
        job=job,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    job: str,
    *,
    client: AuthenticatedClient,
    body: CompatibilityBody,
) -> CompatibilityResponse | Problem | None:
    """Resume Point.Compatibility

     Which queries of the version resume, initialize or are dropped, and every reason it
    cannot start from the snapshot or resume point; nothing is stopped or changed.

    Args:
        job (str): The job's name.
        body (CompatibilityBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CompatibilityResponse | Problem
    """

    return (
        await asyncio_detailed(
            job=job,
            client=client,
            body=body,
        )
    ).parsed
