"""Guest tokens."""

from __future__ import annotations

import datetime as dt
from typing import Any

from litestar import Controller, Request, post
from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.api.openapi import documented
from iris.app.schemas.system import GuestToken
from iris.app.security.auth import issue_guest_token
from iris.app.security.quotas import admit_guest_token
from iris.app.settings import Settings


class AuthController(Controller):
    """Token issuance for visitors who have no account."""

    path = "/api/auth"
    tags = ["Auth"]
    signature_types = [Settings, AsyncSession]

    @post(
        "/guest",
        operation_id="CreateGuestToken",
        status_code=201,
        operation_class=documented(problems={429: ["quota_exceeded"]}),
    )
    async def guest(
        self,
        request: Request[Any, Any, Any],
        settings: NamedDependency[Settings],
        db_session: NamedDependency[AsyncSession],
    ) -> GuestToken:
        """A short-lived anonymous token; it may use guest-accessible agents only. Each client address
        gets a limited number per hour (429 ``quota_exceeded``)."""
        assert settings.jwt_secret
        await admit_guest_token(db_session, request.client.host if request.client else "unknown", settings)
        ttl = dt.timedelta(seconds=settings.guest_token_ttl_seconds)
        token, user_id, expires_at = issue_guest_token(
            settings.jwt_secret, ttl=ttl, audience=settings.jwt_audience
        )
        return GuestToken(
            access_token=token,
            token_type="bearer",  # noqa: S106 (the OAuth token type)
            expires_in=settings.guest_token_ttl_seconds,
            expires_at=expires_at,
            user_id=user_id,
        )
