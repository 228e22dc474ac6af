"""API keys: ``iris_sk_…`` secrets that act as their owner, within their scopes.

A key is 32 random bytes; Iris keeps only its SHA-256 (a fast hash is enough for a secret with 256 bits
of entropy: there is nothing to guess, so nothing for a slow hash to slow down; ADR 0081). A request's
key is looked up by that hash. Each process remembers a lookup for :data:`KEY_CACHE_SECONDS` (so a
client sending its key on every request costs the database one read per key every few seconds, not one
per request), which is also how long a revoked key can still pass on a process that looked it up just
before: under the 5 s the issue allows.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import time
from collections import OrderedDict
from typing import Any, Literal

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from litestar import Request

from iris.app.errors import Forbidden, Unauthorized
from iris.app.persistence.access_models import ApiKey
from iris.app.persistence.db import session_scope
from iris.app.persistence.repositories import ApiKeyRepository, utcnow
from iris.app.security.audit import AuditTrail
from iris.app.security.auth import Principal, Role
from iris.app.security.quotas import admit_key_request

KEY_PREFIX = "iris_sk_"
SHOWN_CHARACTERS = 8
"""How many characters of the secret after ``iris_sk_`` are kept to tell keys apart."""
KEY_CACHE_SECONDS = 2.0
"""How long a process trusts one lookup of a key: a revoked key is refused everywhere within this."""
LAST_USE_EVERY_SECONDS = 60.0
"""A key's last use is written at most this often per process (a write per request would cost more than
the request), and at once when it comes from a new address."""
CACHED_KEYS = 4096

Surface = Literal["agui", "chat", "ui-chat", "openai", "responses", "anthropic", "api"]
SURFACES: tuple[Surface, ...] = ("agui", "chat", "ui-chat", "openai", "responses", "anthropic", "api")


def new_key() -> tuple[str, str, str]:
    """A fresh key: ``(key, its SHA-256, the prefix shown in lists)``."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    return key, key_hash(key), key[: len(KEY_PREFIX) + SHOWN_CHARACTERS]


def key_hash(key: str) -> str:
    """The SHA-256 of a key, hex: what the database holds and is searched by."""
    return hashlib.sha256(key.encode()).hexdigest()


def presented_key(request: Request[Any, Any, Any]) -> str | None:
    """The API key a request carries, ``iris_sk_…`` in ``x-api-key`` or as ``Authorization: Bearer``;
    else ``None``: the credential is then a token, which Anthropic's clients send as ``x-api-key`` too
    (Claude Code's ``ANTHROPIC_API_KEY``)."""
    header = request.headers.get("x-api-key", "").strip()
    if header.startswith(KEY_PREFIX):
        return header
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer" and value.startswith(KEY_PREFIX):
        return value
    return None


def surface_of(path: str) -> Surface:
    """Which surface a request path belongs to, for a key's ``surfaces`` scope."""
    if path.startswith("/v1/messages"):
        return "anthropic"
    if path.startswith("/v1/responses"):
        return "responses"
    if path.startswith("/v1/"):
        return "openai"
    if path.startswith("/agent/"):
        return "agui"
    if path.startswith("/api/agents/") and path.rstrip("/").endswith("/ui-chat"):
        return "ui-chat"
    if path.startswith("/api/agents/") and "/chat" in path:
        return "chat"
    return "api"


class KeyResolver:
    """Turns a presented key into its :class:`Principal`, with a short per-process memory."""

    def __init__(self, alchemy: SQLAlchemyAsyncConfig, audit: AuditTrail) -> None:
        self.alchemy = alchemy
        self.audit = audit
        self._seen: OrderedDict[str, tuple[ApiKey | None, float]] = OrderedDict()
        self._last_use: dict[str, tuple[float, str | None]] = {}

    async def principal(self, key: str, *, path: str, address: str | None) -> Principal:
        """The key's principal for a request to ``path`` from ``address``: 401 ``invalid_api_key`` for an
        unknown, revoked or expired key, 403 ``key_surface_forbidden`` outside its surfaces, 429
        ``rate_limited`` past its requests per minute (counted in the database, across processes)."""
        digest = key_hash(key)
        row = await self._row(digest)
        now = utcnow()
        if row is None or row.revoked_at is not None:
            raise Unauthorized("The API key is not valid.", code="invalid_api_key")
        if row.expires_at is not None and row.expires_at <= now:
            raise Unauthorized("The API key has expired.", code="invalid_api_key")
        surface = surface_of(path)
        if row.surfaces is not None and surface not in row.surfaces:
            raise Forbidden(f"This API key may not call the {surface} surface.", code="key_surface_forbidden")
        if row.requests_per_minute:
            async with session_scope(self.alchemy) as db:
                await admit_key_request(db, str(row.id), row.requests_per_minute)
        role: Role = "admin" if row.role == "admin" else "user"
        principal = Principal(
            user_id=row.owner_id,
            role=role,
            key_id=str(row.id),
            agents=None if row.agents is None else frozenset(row.agents),
            models=None if row.models is None else frozenset(row.models),
            key_budgets=(row.budget_day_usd or 0.0, row.budget_month_usd or 0.0),
            key_tokens_per_minute=row.tokens_per_minute or 0,
        )
        await self._note_use(row, principal, digest, now, address)
        return principal

    async def _row(self, digest: str) -> ApiKey | None:
        remembered = self._seen.get(digest)
        if remembered is not None and time.monotonic() - remembered[1] < KEY_CACHE_SECONDS:
            return remembered[0]
        async with session_scope(self.alchemy) as db:
            row = await ApiKeyRepository(session=db).by_hash(digest)
        self._seen[digest] = (row, time.monotonic())
        self._seen.move_to_end(digest)
        if len(self._seen) > CACHED_KEYS:
            self._seen.popitem(last=False)
        return row

    async def _note_use(
        self, row: ApiKey, principal: Principal, digest: str, now: dt.datetime, address: str | None
    ) -> None:
        noted = self._last_use.get(digest)
        if noted is not None and noted[1] == address and time.monotonic() - noted[0] < LAST_USE_EVERY_SECONDS:
            return
        self._last_use[digest] = (time.monotonic(), address)
        if len(self._last_use) > CACHED_KEYS:
            self._last_use.pop(next(iter(self._last_use)))
        async with session_scope(self.alchemy) as db:
            await ApiKeyRepository(session=db).mark_used(row.id, now, address)
        if address != row.last_used_address:
            row.last_used_address = address  # this process's copy: the next lookup reads the stored one
            await self.audit.record(
                principal, "key used from a new address", f"/api/keys/{row.id}", status=200, address=address
            )
