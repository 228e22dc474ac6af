"""Guest tokens."""

from __future__ import annotations

import datetime as dt

from litestar import Controller, post
from litestar.di import NamedDependency

from app.auth import issue_guest_token
from app.openapi import documented
from app.schemas.system import GuestToken
from app.settings import Settings


class AuthController(Controller):
    """Token issuance for visitors who have no account."""

    path = "/api/auth"
    tags = ["Auth"]

    @post("/guest", operation_id="CreateGuestToken", status_code=201, operation_class=documented())
    async def guest(self, settings: NamedDependency[Settings]) -> GuestToken:
        """A short-lived anonymous token; it may use guest-accessible agents only."""
        assert settings.jwt_secret
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
