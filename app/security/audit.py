"""The audit log's writer: admin changes and API keys' use from a new address, appended as they happen.

Admin changes are recorded in one place, the app's ``before_send`` hook (:func:`audit_hook`): every
successful ``POST``/``PUT``/``PATCH``/``DELETE`` to the catalogue, agents, MCP servers and keys, with the
principal the request authenticated as (``provide_principal`` leaves it in the request's state), the
method and route, the path, the status, the client address, ``x-request-id`` and the trace id. Nothing
from a body is kept, so no secret or token can reach the log. Rows older than
``IRIS_AUDIT_RETENTION_DAYS`` are pruned, at most hourly per process.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Awaitable, Callable

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from litestar.types import Message, Scope
from opentelemetry import trace
from sqlalchemy.exc import SQLAlchemyError

from iris.app.persistence.access_models import AuditEntry
from iris.app.persistence.db import session_scope
from iris.app.persistence.repositories import AuditRepository, utcnow
from iris.app.security.auth import Principal

log = logging.getLogger(__name__)

AUDITED_PREFIXES = ("/api/models", "/api/agents", "/api/mcp-servers", "/api/keys")
"""Paths whose changes are audited (the chat surfaces under ``/api/agents/{slug}/`` are users' own)."""
_USER_PATHS = ("/chat", "/sessions", "/ui-chat")
_CHANGES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
PRUNE_EVERY_SECONDS = 3600.0
_STATUS_STATE = "iris_audit_status"
PRINCIPAL_STATE = "iris_principal"
"""Where ``provide_principal`` leaves the caller in the request's state, for the hook."""


class AuditTrail:
    """Appends rows in their own transaction (an audit row never rides on, or fails, the caller's)."""

    def __init__(self, alchemy: SQLAlchemyAsyncConfig, *, retention_days: int) -> None:
        self.alchemy = alchemy
        self.retention_days = retention_days
        self._pruned_at = float("-inf")

    async def record(
        self,
        principal: Principal,
        action: str,
        target: str,
        *,
        status: int,
        address: str | None,
        request_id: str | None = None,
    ) -> None:
        """Append one row; a database failure is logged, never raised into the request."""
        entry = AuditEntry(
            at=utcnow(),
            actor=principal.user_id,
            actor_key_id=principal.key_id,
            action=action[:120],
            target=target[:400],
            status=status,
            address=address,
            request_id=request_id[:128] if request_id else None,
            trace_id=current_trace_id(),
        )
        try:
            async with session_scope(self.alchemy) as db:
                repo = AuditRepository(session=db)
                await repo.append(entry)
                if self.retention_days and time.monotonic() - self._pruned_at > PRUNE_EVERY_SECONDS:
                    self._pruned_at = time.monotonic()
                    await repo.prune(utcnow() - dt.timedelta(days=self.retention_days))
        except (SQLAlchemyError, OSError) as exc:
            log.error(
                "audit_write_failed: %s %s: %s", action, target, exc, extra={"code": "audit_write_failed"}
            )


def current_trace_id() -> str | None:
    """The current span's trace id (hex), or ``None`` when tracing is off."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


def audited(method: str, path: str) -> bool:
    """Whether a request is an admin change the log keeps."""
    if method not in _CHANGES or not path.startswith(AUDITED_PREFIXES):
        return False
    return not (path.startswith("/api/agents/") and any(part in path for part in _USER_PATHS))


def audit_hook(trail: AuditTrail) -> Callable[[Message, Scope], Awaitable[None]]:
    """The ``before_send`` hook that records each successful audited change. The status is noted when
    the answer starts and the row written with its last body chunk: by then the request's own
    transaction has committed (the database plugin commits when the answer starts), so the row's own
    transaction never waits on it (SQLite has one writer)."""

    async def hook(message: Message, scope: Scope) -> None:
        state = scope.get("state", {})
        if message["type"] == "http.response.start":
            method, path = str(scope.get("method", "")), str(scope.get("path", ""))
            if message["status"] < 400 and audited(method, path):
                state[_STATUS_STATE] = message["status"]
            return
        if message["type"] != "http.response.body" or message.get("more_body", False):
            return
        status = state.pop(_STATUS_STATE, None)
        principal = state.get(PRINCIPAL_STATE)
        if status is None or not isinstance(principal, Principal):
            return
        headers = dict(scope.get("headers", []))
        request_id = headers.get(b"x-request-id", b"").decode("latin-1") or None
        client = scope.get("client")
        path = str(scope.get("path", ""))
        template = scope.get("path_template") or path
        await trail.record(
            principal,
            f"{scope.get('method', '')} {template}",
            path,
            status=status,
            address=client[0] if client else None,
            request_id=request_id,
        )

    return hook
