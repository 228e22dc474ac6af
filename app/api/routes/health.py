"""Liveness and readiness."""

from __future__ import annotations

from litestar import Controller, get
from litestar.datastructures import State
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from iris.app.api.openapi import documented
from iris.app.errors import ServiceUnavailable
from iris.app.persistence.migrations import current_revisions, head_revisions
from iris.app.persistence.write_probe import cannot_write
from iris.app.schemas.system import Health, Readiness


class HealthController(Controller):
    """Probes for load balancers and orchestrators; no auth."""

    tags = ["Health"]

    @get("/healthz", operation_id="Healthz", operation_class=documented())
    async def healthz(self) -> Health:
        """The process is up."""
        return Health(status="ok")

    @get(
        "/readyz",
        operation_id="Readyz",
        operation_class=documented(
            problems={503: ["database_unreachable", "migrations_pending", "database_unwritable"]}
        ),
    )
    async def readyz(self, state: State) -> Readiness:
        """The database answers, its schema is at the migrations' head, and this process can write to it
        (a write that changes nothing gets its turn within the lock timeout)."""
        engine = state.alchemy.get_engine()
        try:
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
            current = await current_revisions(engine)
        except (SQLAlchemyError, OSError) as exc:
            raise ServiceUnavailable("The database is not reachable.", code="database_unreachable") from exc
        head = head_revisions()
        if current != head:
            raise ServiceUnavailable(
                f"The database is at {sorted(current) or 'no revision'}, migrations are at {sorted(head)}: "
                "run `just migrate`.",
                code="migrations_pending",
            )
        if (reason := await cannot_write(engine)) is not None:
            raise ServiceUnavailable(
                f"This process cannot write to the database: {reason}.", code="database_unwritable"
            )
        return Readiness(status="ready", database="ok", revision=sorted(current), head=sorted(head))
