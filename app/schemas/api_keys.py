"""API keys as ``/api/keys`` takes and shows them."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

import msgspec

from iris.providers.wire import RequestStruct, WireStruct

KeyName = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
OwnerId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")]
"""A user id, or a service identity an admin names (the same alphabet as a token's ``sub``)."""
SurfaceName = Literal["agui", "chat", "ui-chat", "openai", "responses", "anthropic", "api"]
Days = Annotated[int, msgspec.Meta(ge=1, le=3650)]
PerMinute = Annotated[int, msgspec.Meta(ge=1, le=1_000_000)]
Usd = Annotated[float, msgspec.Meta(ge=0, le=1_000_000_000)]
"""A budget in USD; 0 is no budget, as for the settings' budgets."""


class KeyScopes(WireStruct, kw_only=True):
    """What a key may reach; a missing list means any."""

    agents: list[str] | None = None
    """Agent slugs."""
    models: list[str] | None = None
    """Model refs, ``provider/modelId``."""
    surfaces: list[SurfaceName] | None = None
    """``agui`` (``/agent/*``), ``chat`` and ``ui-chat`` (``/api/agents/{slug}/…``), ``openai``
    (``/v1/chat/completions``, ``/v1/models``), ``responses``, ``anthropic`` (``/v1/messages``), ``api``
    (the rest of ``/api``)."""


class ApiKeyCreate(RequestStruct, kw_only=True):
    """A new key. ``owner`` (admins only) names another user or a service identity; ``role`` ``admin``
    (admins only) makes an admin key."""

    name: KeyName
    owner: OwnerId | None = None
    role: Literal["user", "admin"] = "user"
    scopes: KeyScopes = msgspec.field(default_factory=KeyScopes)
    expires_in_days: Days | None = None
    requests_per_minute: PerMinute | None = None
    tokens_per_minute: PerMinute | None = None
    """Model tokens the runs the key started this minute may use (429 ``rate_limited`` after)."""
    budget_day_usd: Usd | None = None
    """What the runs the key starts may cost per UTC day, in USD (429 ``budget_exceeded`` after)."""
    budget_month_usd: Usd | None = None
    """The same per UTC calendar month."""
    """Requests the key may make per minute over all processes (429 ``rate_limited`` past it)."""


class ApiKeyLimits(RequestStruct, kw_only=True):
    """``PATCH /api/keys/{keyId}`` (admins): the key's limits and budgets; a field left out is kept,
    ``null`` removes that limit."""

    requests_per_minute: PerMinute | msgspec.UnsetType | None = msgspec.UNSET
    tokens_per_minute: PerMinute | msgspec.UnsetType | None = msgspec.UNSET
    budget_day_usd: Usd | msgspec.UnsetType | None = msgspec.UNSET
    budget_month_usd: Usd | msgspec.UnsetType | None = msgspec.UNSET


class ApiKeyOut(WireStruct, kw_only=True):
    """A key as lists show it: never the secret, only its first characters (``prefix``)."""

    id: str
    prefix: str
    name: str
    owner: str
    role: Literal["user", "admin"]
    scopes: KeyScopes
    created_by: str
    created_at: dt.datetime
    expires_at: dt.datetime | None
    requests_per_minute: int | None
    tokens_per_minute: int | None = None
    budget_day_usd: float | None = None
    budget_month_usd: float | None = None
    revoked_at: dt.datetime | None
    last_used_at: dt.datetime | None


class ApiKeyCreated(ApiKeyOut, kw_only=True):
    """The new key, with the whole secret in ``key``: shown this once, never again."""

    key: str


class ApiKeyList(WireStruct, kw_only=True):
    keys: list[ApiKeyOut]
