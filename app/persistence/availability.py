"""Which failures mean "the database is unavailable right now" (a 503 with ``Retry-After``, or a
``RUN_ERROR`` ``database_unavailable``) rather than a bug (a 500 ``internal_error``).

Transient: SQLite busy or locked (another process holds it past the lock deadline, see
``iris.app.persistence.sqlite``) or unable to open its file; PostgreSQL refusing or dropping connections
(server stopped, shutting down, restarting), a connection SQLAlchemy found invalidated, and a pool
checkout that timed out. The whole cause chain is searched: advanced-alchemy and SQLAlchemy wrap the
driver's exception.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator

import asyncpg
from sqlalchemy import exc as sa_exc

RETRY_AFTER_SECONDS = 5
"""What a 503 ``database_unavailable`` tells clients to wait before trying again."""

_SQLITE_TRANSIENT = re.compile(r"database is locked|database table is locked|busy|unable to open", re.I)
_ASYNCPG_TRANSIENT = (
    asyncpg.exceptions.PostgresConnectionError,  # 08xxx: cannot connect, connection failure
    asyncpg.exceptions.OperatorInterventionError,  # 57xxx: admin shutdown, cannot connect now
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.exceptions.InterfaceError,  # "connection is closed"
)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


CAUSE_CHARS = 300


def one_line(text: str) -> str:
    """``text`` on one line (whitespace runs, newlines included, become one space), at most
    :data:`CAUSE_CHARS` characters: a log line per failure, however a vendor formats its errors."""
    flat = " ".join(text.split())
    return flat if len(flat) <= CAUSE_CHARS else flat[: CAUSE_CHARS - 1] + "…"


def cause(exc: BaseException) -> str:
    """The failure for one log line: the driver's own error (what SQLAlchemy wrapped, and what
    advanced-alchemy wrapped again: its "IntegrityError: There was an issue processing the statement"
    hid a "database is locked"), its type and message — never the SQL or its parameters, which
    SQLAlchemy's message adds."""
    root = next(
        (c.orig for c in _causes(exc) if isinstance(c, sa_exc.DBAPIError) and c.orig is not None), exc
    )
    return one_line(f"{type(root).__name__}: {root}")


def database_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` (or anything it was raised from) says the database cannot be used right now."""
    for cause in _causes(exc):
        if isinstance(cause, sqlite3.OperationalError) and _SQLITE_TRANSIENT.search(str(cause)):
            return True
        if isinstance(cause, sa_exc.DBAPIError) and cause.connection_invalidated:
            return True
        if isinstance(cause, sa_exc.DisconnectionError | sa_exc.TimeoutError | ConnectionError):
            return True
        if isinstance(cause, _ASYNCPG_TRANSIENT):
            return True
    return False
