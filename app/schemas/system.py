"""Health, readiness and auth shapes."""

from __future__ import annotations

import datetime as dt

from iris.providers.wire import WireStruct


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


class LoopStats(WireStruct):
    """``GET /debug/loop`` (``IRIS_DEBUG`` only): the event loop's worst stalls since start-up."""

    max_stall_ms: float
    """The latest a ready callback ran, whatever the cause."""
    max_blocked_ms: float
    """The same, less the time the loop thread waited for a CPU: what blocked it (see app/loop_monitor)."""
    stalls: int
    """Times the loop was blocked longer than ``warnMs``."""
    warn_ms: float
    worst_stack: str | None
    """The loop thread's innermost frames during the worst block (``null`` if none was late enough)."""
