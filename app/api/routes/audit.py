"""``GET /api/audit``: the audit log, newest first, filtered and paged (admins only)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.params import FromQuery, QueryParameter

from iris.app.api.openapi import documented
from iris.app.persistence.repositories import AuditRepository
from iris.app.schemas.audit import AuditEntryOut, AuditPage
from iris.app.security.auth import Principal

PAGE_SIZE = 100
MAX_ID = 2**63 - 1
"""The largest id either engine stores (a signed 64-bit integer)."""


class AuditController(Controller):
    """Admin changes (models, agents, MCP servers, keys) and keys used from a new address."""

    path = "/api/audit"
    tags = ["Audit"]
    security = [{"BearerToken": []}]
    signature_types = [Principal, AuditRepository]

    @get(
        "/",
        operation_id="ListAudit",
        operation_class=documented(problems={403: ["admin_required"], 422: ["validation_failed"]}),
    )
    async def list_audit(
        self,
        admin: NamedDependency[Principal],
        audit_repo: NamedDependency[AuditRepository],
        actor: FromQuery[str | None] = None,
        action: FromQuery[str | None] = None,
        since: FromQuery[dt.datetime | None] = None,
        before: Annotated[int | None, QueryParameter(ge=1, le=MAX_ID)] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=500)] = PAGE_SIZE,
    ) -> AuditPage:
        """Rows newest first: by actor, by action (a prefix such as POST /api/keys), from since; pass the
        answer's nextBefore as before for the next page."""
        rows = await audit_repo.page(actor=actor, action=action, since=since, before_id=before, limit=limit)
        entries = [
            AuditEntryOut(
                id=row.id,
                at=row.at,
                actor=row.actor,
                actor_key_id=row.actor_key_id,
                action=row.action,
                target=row.target,
                status=row.status,
                address=row.address,
                request_id=row.request_id,
                trace_id=row.trace_id,
                detail=row.detail,
            )
            for row in rows
        ]
        return AuditPage(entries=entries, next_before=entries[-1].id if len(entries) == limit else None)
