"""Which bearer tokens Iris accepts: its own HS256 tokens, and an identity provider's signed ones.

HS256 tokens are verified with the shared secret only (``IRIS_JWT_SECRET``: the embedded default,
guest tokens, Supabase's legacy secret). RS256, ES256 and EdDSA tokens are verified with the identity
provider's published keys (:mod:`iris.app.security.jwks`), found by ``IRIS_AUTH_ISSUER``'s discovery
document, ``IRIS_AUTH_JWKS_URL``, or a Supabase project's URL; their ``iss`` and ``aud`` must be the
configured ones. The algorithm is taken from the token only to pick which of these two paths applies:
a public key is never an HMAC secret, and ``none`` is never accepted.

Every refusal is a 401 with a stable code: ``token_expired``, ``token_issuer``, ``token_audience``,
``token_algorithm`` (``none``, an algorithm Iris does not verify, or one its key is not for),
``token_key_unknown`` (no ``kid``, or one the provider does not publish), ``invalid_token`` (anything
else: a bad signature, a malformed token, a missing claim, an unusable subject).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

import httpx
import jwt

from iris.app.errors import Unauthorized
from iris.app.security.auth import VERIFIED_TOKENS, Principal, Role, decode_token, refusal, usable_user_id
from iris.app.security.claims import ClaimRule, is_admin, parse_claim_rule
from iris.app.security.jwks import SIGNING_ALGORITHMS, KeyMismatch, KeySet
from iris.app.settings import Settings


class TokenVerifier:
    """Turns a bearer token into a :class:`Principal`, or raises :class:`Unauthorized`."""

    def __init__(self, settings: Settings, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        assert settings.jwt_secret, "prepare() fills the secret before the app starts"
        self.secret = settings.jwt_secret
        self.audience = settings.jwt_audience
        self.provider_audience = settings.auth_audience or settings.jwt_audience
        self.admin_rule: ClaimRule | None = (
            parse_claim_rule(settings.auth_admin_claim) if settings.auth_admin_claim else None
        )
        jwks_url, self.issuer = identity_provider(settings)
        self.keys: KeySet | None = None
        if jwks_url is not None or self.issuer is not None:
            self.keys = KeySet(
                jwks_url=jwks_url,
                issuer=self.issuer if jwks_url is None else None,
                default_ttl=settings.auth_jwks_cache_seconds,
                refetch_seconds=settings.auth_jwks_refetch_seconds,
                transport=transport,
            )
        self._verified: OrderedDict[tuple[str, int], tuple[Principal, float]] = OrderedDict()

    async def verify(self, token: str) -> Principal:
        """The token's principal. HS256 costs no I/O; a provider's token costs none either while its
        key is cached, and a remembered token skips even the signature check (its expiry still counts)."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError as exc:
            raise Unauthorized("The token is not valid.", code="invalid_token") from exc
        alg = header.get("alg")
        if alg == "HS256":
            return decode_token(self.secret, token, audience=self.audience)
        if alg not in SIGNING_ALGORITHMS or self.keys is None:
            raise Unauthorized(f"Tokens signed with {alg!r} are not accepted.", code="token_algorithm")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise Unauthorized("The token names no signing key ('kid').", code="token_key_unknown")
        try:
            key = await self.keys.key_for(kid, alg)
        except KeyMismatch as exc:
            raise Unauthorized("The token's algorithm does not fit its key.", code="token_algorithm") from exc
        if key is None:
            raise Unauthorized("The token's signing key is not known.", code="token_key_unknown")
        remembered = self._verified.get((token, self.keys.generation))
        if remembered is None:
            remembered = self._decode(token, key, alg)
            self._remember((token, self.keys.generation), remembered)
        principal, expires_at = remembered
        if expires_at <= time.time():
            raise Unauthorized("The token has expired.", code="token_expired")
        return principal

    async def aclose(self) -> None:
        """Close the key set's HTTP client."""
        if self.keys is not None:
            await self.keys.aclose()

    def _decode(self, token: str, key: jwt.PyJWK, alg: str) -> tuple[Principal, float]:
        required = ["sub", "exp", "aud", *(["iss"] if self.issuer else [])]
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=self.provider_audience,
                issuer=self.issuer,
                options={"require": required},
            )
        except jwt.InvalidTokenError as exc:
            raise refusal(exc) from exc
        return self._principal(claims), float(claims["exp"])

    def _principal(self, claims: dict[str, Any]) -> Principal:
        sub = usable_user_id(claims.get("sub"))
        role: Role
        if is_admin(claims, self.admin_rule):
            role = "admin"
        elif claims.get("is_anonymous") is True:
            role = "guest"
        else:
            role = "user"
        return Principal(user_id=sub, role=role)

    def _remember(self, key: tuple[str, int], value: tuple[Principal, float]) -> None:
        self._verified[key] = value
        if len(self._verified) > VERIFIED_TOKENS:
            self._verified.popitem(last=False)


def identity_provider(settings: Settings) -> tuple[str | None, str | None]:
    """``(jwks_url, issuer)`` of the configured identity provider: the explicit settings, else a Supabase
    project's (``IRIS_SUPABASE_URL``: its keys at ``/auth/v1/.well-known/jwks.json``, its issuer
    ``/auth/v1``), else none."""
    if settings.auth_issuer or settings.auth_jwks_url:
        return settings.auth_jwks_url, settings.auth_issuer
    if settings.supabase_url:
        auth = settings.supabase_url.rstrip("/") + "/auth/v1"
        return auth + "/.well-known/jwks.json", auth
    return None, None
