"""``/api/keys``: long-lived API keys. A user makes, lists and revokes their own; an admin anyone's, and
keys for a service identity (an ``owner`` that is no signed-in user)."""

from __future__ import annotations

import datetime as dt
from typing import Literal

import msgspec
from litestar import Controller, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody

from iris.app.api.openapi import documented
from iris.app.errors import Forbidden, NotFound
from iris.app.persistence.access_models import ApiKey
from iris.app.persistence.repositories import ApiKeyRepository, parse_uuid, utcnow
from iris.app.schemas.api_keys import (
    ApiKeyCreate,
    ApiKeyCreated,
    ApiKeyLimits,
    ApiKeyList,
    ApiKeyOut,
    KeyScopes,
)
from iris.app.security.api_keys import new_key
from iris.app.security.auth import Principal

_NOT_FOUND = {404: ["api_key_not_found"]}


class ApiKeyController(Controller):
    """Keys act as their owner wherever a token does (``Authorization: Bearer iris_sk_…`` or
    ``x-api-key``), within their scopes."""

    path = "/api/keys"
    tags = ["Keys"]
    security = [{"BearerToken": []}]
    signature_types = [Principal, ApiKeyRepository]

    @post(
        "/",
        operation_id="CreateApiKey",
        status_code=201,
        operation_class=documented(problems={403: ["admin_required", "keys_not_for_guests"]}),
    )
    async def create_key(
        self,
        principal: NamedDependency[Principal],
        api_key_repo: NamedDependency[ApiKeyRepository],
        data: JSONBody[ApiKeyCreate],
    ) -> ApiKeyCreated:
        """A new key; the whole key is in this answer only (Iris keeps its hash)."""
        if principal.is_guest:
            raise Forbidden("Guests may not make API keys; sign in.", code="keys_not_for_guests")
        owner = data.owner or principal.user_id
        if (owner != principal.user_id or data.role == "admin") and not principal.is_admin:
            raise Forbidden("Only an admin makes keys for others or admin keys.", code="admin_required")
        key, digest, prefix = new_key()
        scopes = data.scopes
        row = ApiKey(
            secret_hash=digest,
            prefix=prefix,
            name=data.name,
            owner_id=owner,
            role=data.role,
            agents=scopes.agents,
            models=scopes.models,
            surfaces=list(scopes.surfaces) if scopes.surfaces is not None else None,
            requests_per_minute=data.requests_per_minute,
            tokens_per_minute=data.tokens_per_minute,
            budget_day_usd=data.budget_day_usd,
            budget_month_usd=data.budget_month_usd,
            created_by=principal.user_id,
            expires_at=utcnow() + dt.timedelta(days=data.expires_in_days) if data.expires_in_days else None,
        )
        row = await api_key_repo.add(row)
        out = key_out(row)
        return ApiKeyCreated(**{name: getattr(out, name) for name in out.__struct_fields__}, key=key)

    @get("/", operation_id="ListApiKeys", operation_class=documented())
    async def list_keys(
        self,
        principal: NamedDependency[Principal],
        api_key_repo: NamedDependency[ApiKeyRepository],
        owner: FromQuery[str | None] = None,
    ) -> ApiKeyList:
        """The caller's keys; an admin's call lists everyone's, or one owner's."""
        if principal.is_admin:
            rows = await api_key_repo.listed(owner)
        else:
            rows = await api_key_repo.listed(principal.user_id)
        return ApiKeyList(keys=[key_out(row) for row in rows])

    @patch(
        "/{keyId:str}",
        operation_id="UpdateApiKeyLimits",
        operation_class=documented(problems={**_NOT_FOUND, 403: ["admin_required"]}),
    )
    async def update_limits(
        self,
        principal: NamedDependency[Principal],
        api_key_repo: NamedDependency[ApiKeyRepository],
        keyId: FromPath[str],
        data: JSONBody[ApiKeyLimits],
    ) -> ApiKeyOut:
        """Change a key's limits and budgets (admins: a user could otherwise lift their own key's);
        every process applies them within a few seconds, as it sees a revocation."""
        if not principal.is_admin:
            raise Forbidden("Only an admin changes a key's limits and budgets.", code="admin_required")
        parsed = parse_uuid(keyId)
        row = await api_key_repo.by_id(parsed) if parsed is not None else None
        if row is None:
            raise NotFound("No such API key.", code="api_key_not_found")
        for name in data.__struct_fields__:
            if (value := getattr(data, name)) is not msgspec.UNSET:
                setattr(row, name, value)
        await api_key_repo.session.flush()
        return key_out(row)

    @delete("/{keyId:str}", operation_id="RevokeApiKey", operation_class=documented(problems=_NOT_FOUND))
    async def revoke_key(
        self,
        principal: NamedDependency[Principal],
        api_key_repo: NamedDependency[ApiKeyRepository],
        keyId: FromPath[str],
    ) -> None:
        """Revoke a key: every process refuses it within a few seconds (401 invalid_api_key)."""
        parsed = parse_uuid(keyId)
        owner = None if principal.is_admin else principal.user_id
        row = await api_key_repo.revoke(parsed, owner, utcnow()) if parsed is not None else None
        if row is None:
            raise NotFound("No such API key.", code="api_key_not_found")


def key_out(row: ApiKey) -> ApiKeyOut:
    role: Literal["user", "admin"] = "admin" if row.role == "admin" else "user"
    return ApiKeyOut(
        id=str(row.id),
        prefix=row.prefix,
        name=row.name,
        owner=row.owner_id,
        role=role,
        scopes=KeyScopes(agents=row.agents, models=row.models, surfaces=row.surfaces),  # type: ignore[arg-type]
        created_by=row.created_by,
        created_at=row.created_at,
        expires_at=row.expires_at,
        requests_per_minute=row.requests_per_minute,
        tokens_per_minute=row.tokens_per_minute,
        budget_day_usd=row.budget_day_usd,
        budget_month_usd=row.budget_month_usd,
        revoked_at=row.revoked_at,
        last_used_at=row.last_used_at,
    )
