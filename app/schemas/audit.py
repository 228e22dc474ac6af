"""The audit log as ``GET /api/audit`` shows it."""

from __future__ import annotations

import datetime as dt
from typing import Any

from iris.providers.wire import WireStruct


class AuditEntryOut(WireStruct, kw_only=True):
    """One row: who did what to which path, when, with which status, and the ids to find it elsewhere.
    ``actorKeyId`` is the API key they came with; ``None`` for a token."""

    id: int
    at: dt.datetime
    actor: str
    actor_key_id: str | None
    action: str
    target: str
    status: int
    address: str | None
    request_id: str | None
    trace_id: str | None
    detail: dict[str, Any] | None = None
    """A run's row: ``tool``, ``server``, ``outcome``, ``durationMs`` and ``arguments`` (redacted unless
    kept)."""


class AuditPage(WireStruct, kw_only=True):
    """Newest first; ``nextBefore`` is the ``before`` of the next (older) page, ``None`` after the last."""

    entries: list[AuditEntryOut]
    next_before: int | None
