from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Response
from pydantic import Field, field_validator
from sqlalchemy import select

from app.audit import service as audit
from app.auth import service
from app.auth.deps import Admin
from app.auth.models import ApiToken
from app.core.deps import DbSession
from app.core.schemas import Body
from app.core.schemas import Response as ResponseModel

router = APIRouter(tags=["tokens"])


class TokenCreate(Body):
    name: str = Field(min_length=1, max_length=128)
    scope: Literal["read", "operate", "admin"]
    expires_at: datetime | None = None

    @field_validator("expires_at")
    @classmethod
    def _in_the_future(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)  # a time without a zone is UTC, as stored
        if value is not None and value <= datetime.now(UTC):
            raise ValueError("is not in the future: a token that expired already is of no use")
        return value


class TokenResponse(ResponseModel):
    id: int
    name: str
    scope: str
    prefix: str
    run_id: int | None
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None


class TokenCreated(TokenResponse):
    token: str = Field(description="The secret. Shown once; store it now.")


@router.post(
    "/tokens",
    status_code=201,
    response_model=TokenCreated,
    operation_id="createToken",
    name="token.create",
)
def create_token(body: TokenCreate, session: DbSession, actor: Admin) -> TokenCreated:
    row, secret = service.create_token(
        session, name=body.name, scope=service.Scope(body.scope), expires_at=body.expires_at
    )
    audit.record(
        session, actor, "token.create", target=f"{row.name} ({row.scope})", status_code=201
    )
    return TokenCreated.model_validate(
        {**TokenResponse.model_validate(row).model_dump(), "token": secret}
    )


@router.get(
    "/tokens", response_model=list[TokenResponse], operation_id="listTokens", name="token.list"
)
def list_tokens(session: DbSession, _: Admin) -> list[TokenResponse]:
    rows = session.scalars(select(ApiToken).where(ApiToken.run_id.is_(None)).order_by(ApiToken.id))
    return [TokenResponse.model_validate(r) for r in rows]


@router.delete(
    "/tokens/{token_id}", status_code=204, operation_id="revokeToken", name="token.revoke"
)
def revoke_token(
    token_id: Annotated[int, Path(ge=1, le=2**62)], session: DbSession, actor: Admin
) -> Response:
    service.revoke_token(session, token_id)
    audit.record(session, actor, "token.revoke", target=str(token_id), status_code=204)
    return Response(status_code=204)
