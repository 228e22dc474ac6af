"""Iris's own bearer JWTs (HS256, Supabase-compatible claims) and the principal they carry.

An identity provider's tokens are verified by :mod:`iris.app.security.identity`, which hands HS256
ones to :func:`decode_token`.

A principal's ``user_id`` ends up in storage paths (``agent-inputs/{userId}/…``), so it is
checked against a strict alphabet here, once, rather than escaped everywhere else.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import time
import uuid
from typing import Any, Literal

import jwt
import msgspec
from litestar import Request

from iris.app.errors import Forbidden, Unauthorized

Role = Literal["user", "admin", "guest"]

_USER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
_ADMIN_ROLES = frozenset({"admin", "service_role"})
DEV_TOKEN_TTL = dt.timedelta(days=30)


class Principal(msgspec.Struct, frozen=True, kw_only=True):
    """Who is calling: the JWT ``sub`` and what the token lets them do."""

    user_id: str
    role: Role
    key_id: str | None = None
    """The API key the caller came with; ``None`` for a token."""
    agents: frozenset[str] | None = None
    """The agent slugs the caller's key may use; ``None``: any."""
    models: frozenset[str] | None = None
    """The model refs (``provider/modelId``) the caller's key may use; ``None``: any."""
    key_tokens_per_minute: int = 0
    """The model tokens per minute the caller's key's runs may use (0: no limit)."""
    key_budgets: tuple[float, float] = (0.0, 0.0)
    """The caller's key's USD budgets per UTC day and month (0: none)."""

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    def check_agent(self, slug: str) -> None:
        """403 ``key_agent_forbidden`` when the caller's key does not cover the agent."""
        if self.agents is not None and slug not in self.agents:
            raise Forbidden(f"This API key may not use the agent {slug!r}.", code="key_agent_forbidden")

    def check_model(self, ref: str) -> None:
        """403 ``key_model_forbidden`` when the caller's key does not cover the model."""
        if self.models is not None and ref not in self.models:
            raise Forbidden(f"This API key may not use the model {ref!r}.", code="key_model_forbidden")

    @property
    def is_guest(self) -> bool:
        return self.role == "guest"


def issue_token(
    secret: str,
    user_id: str,
    *,
    role: Role = "user",
    ttl: dt.timedelta = DEV_TOKEN_TTL,
    audience: str = "authenticated",
) -> str:
    """Sign a token with the claims Supabase Auth would put in it."""
    if not _USER_ID.fullmatch(user_id):
        raise ValueError(f"user id {user_id!r} must match {_USER_ID.pattern}")
    now = dt.datetime.now(dt.UTC)
    claims: dict[str, Any] = {
        "sub": user_id,
        "aud": audience,
        "iat": int(now.timestamp()),
        "exp": int((now + ttl).timestamp()),
        # Supabase puts "authenticated" here for every signed-in user, anonymous ones included.
        "role": "admin" if role == "admin" else "authenticated",
        "is_anonymous": role == "guest",
    }
    return jwt.encode(claims, secret, algorithm="HS256")


def issue_guest_token(secret: str, *, ttl: dt.timedelta, audience: str) -> tuple[str, str, dt.datetime]:
    """A fresh anonymous identity: ``(token, user_id, expires_at)``."""
    user_id = f"guest-{uuid.uuid4().hex}"
    token = issue_token(secret, user_id, role="guest", ttl=ttl, audience=audience)
    return token, user_id, dt.datetime.now(dt.UTC) + ttl


def decode_token(secret: str, token: str, *, audience: str) -> Principal:
    """Verify signature, expiry and audience; map the claims to a :class:`Principal`.

    A token that verified once is remembered (the most recent :data:`VERIFIED_TOKENS`): clients send the
    same one on every request, and checking its HMAC and claims again cost a tenth of a millisecond per
    request. Only its expiry can change its answer, so that is checked every time.
    """
    principal, expires_at = _verified(secret, token, audience)
    if expires_at <= time.time():
        raise Unauthorized("The token has expired.", code="token_expired")
    return principal


VERIFIED_TOKENS = 4096


@functools.lru_cache(maxsize=VERIFIED_TOKENS)  # a refusal raises, and is never remembered
def _verified(secret: str, token: str, audience: str) -> tuple[Principal, float]:
    try:
        claims = jwt.decode(
            token,
            secret,
            algorithms=["HS256"],
            audience=audience,
            options={"require": ["sub", "exp", "aud"]},
        )
    except jwt.InvalidTokenError as exc:
        raise refusal(exc) from exc
    sub = usable_user_id(claims.get("sub"))
    role: Role
    if claims.get("role") in _ADMIN_ROLES:
        role = "admin"
    elif claims.get("is_anonymous") is True:
        role = "guest"
    else:
        role = "user"
    return Principal(user_id=sub, role=role), float(claims["exp"])


def usable_user_id(sub: object) -> str:
    """The ``sub`` claim if it is a user id Iris can put in storage paths, else 401."""
    if not isinstance(sub, str) or not _USER_ID.fullmatch(sub):
        raise Unauthorized("The token's subject is not a usable user id.", code="invalid_token")
    return sub


def refusal(exc: jwt.InvalidTokenError) -> Unauthorized:
    """The 401 for one of PyJWT's refusals, with its stable code."""
    if isinstance(exc, jwt.ExpiredSignatureError):
        return Unauthorized("The token has expired.", code="token_expired")
    if isinstance(exc, jwt.InvalidIssuerError) or (
        isinstance(exc, jwt.MissingRequiredClaimError) and exc.claim == "iss"
    ):
        return Unauthorized("The token is from another issuer.", code="token_issuer")
    if isinstance(exc, jwt.InvalidAudienceError) or (
        isinstance(exc, jwt.MissingRequiredClaimError) and exc.claim == "aud"
    ):
        return Unauthorized("The token is for another audience.", code="token_audience")
    if isinstance(exc, jwt.InvalidAlgorithmError):
        return Unauthorized("The token's algorithm is not accepted.", code="token_algorithm")
    return Unauthorized("The token is not valid.", code="invalid_token")


def bearer_token(request: Request[Any, Any, Any]) -> str:
    """The token from ``Authorization: Bearer …`` or, as Anthropic's clients send their key,
    ``x-api-key``; else 401."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if not header and request.headers.get("x-api-key", "").strip():
        return request.headers["x-api-key"].strip()
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized(
            "Send 'Authorization: Bearer <token>' (or 'x-api-key: <token>').", code="missing_token"
        )
    return token.strip()


def require_admin(principal: Principal) -> Principal:
    """The principal if it is an admin, else 403."""
    if not principal.is_admin:
        raise Forbidden("This needs the admin role.", code="admin_required")
    return principal
