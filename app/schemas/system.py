"""Health, readiness and auth shapes."""

from __future__ import annotations

import datetime as dt

from providers.wire import WireStruct


class Health(WireStruct):
    """``GET /healthz``: the process answers."""

    status: str


class Readiness(WireStruct):
    """``GET /readyz``: the database answers and is migrated to head."""

    status: str
    database: str
    revision: list[str]
    head: list[str]


class GuestToken(WireStruct):
    """``POST /api/auth/guest``: a short-lived anonymous identity."""

    access_token: str
    token_type: str
    expires_in: int
    expires_at: dt.datetime
    user_id: str
