"""Whether this process can write to its database now: ``/readyz`` asks, so a process whose writes would
all fail (a write turn held past the lock timeout, another process holding SQLite's file, a PostgreSQL
that only reads) is not called ready while it answers every write with 503."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from iris.app.persistence.availability import cause
from iris.app.persistence.db import write_lock

PROBE = text("UPDATE alembic_version SET version_num = version_num WHERE 1 = 0")
"""A write that changes nothing: it still needs what any write needs (SQLite's write turn and the
file's write lock; a read-write PostgreSQL transaction)."""


async def cannot_write(engine: AsyncEngine) -> str | None:
    """Why this process cannot write now, or ``None`` when it can: the probe write, rolled back, waits
    at most the lock timeout, like any writer; a write turn held longer than that is reported at once."""
    lock = write_lock(engine)
    if lock is not None and (held := lock.held_for) > lock.timeout:
        return f"a write turn has been held for {held:.1f} s (the lock timeout is {lock.timeout:g} s)"
    try:
        async with engine.connect() as connection:
            await connection.execute(PROBE)
            await connection.rollback()
    except (SQLAlchemyError, OSError) as exc:
        return cause(exc)
    return None
