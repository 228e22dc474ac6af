"""What the writers that skip the ORM share (the intake's and the closing write's rows, ADR 0055):
statements spelled once at import, values bound by their columns' own types, so that what they store
is what the ORM would have stored, and :func:`execute`, which on SQLite hands a statement straight to
Iris's connection."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.postgresql.base import PGDialect
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from iris.app.persistence.sqlite import IrisConnection, IrisCursor


def insert_sql(table: str, columns: Sequence[str], marks: Sequence[str]) -> str:
    """``INSERT INTO table (columns) VALUES (marks)``."""
    # Every statement is built once, at import, from the callers' constants: no value is in it.
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(marks)})"  # noqa: S608


@functools.cache
def _pg_dialect() -> Dialect:
    """Only to spell the column types in the casts, once, at import."""
    return PGDialect()  # type: ignore[no-untyped-call]


def pg_type(table: Table, column: str) -> str:
    """The column's type as PostgreSQL spells it in a cast (``UUID``, ``VARCHAR(16)``, ``JSONB``…)."""
    return str(table.c[column].type.compile(_pg_dialect()))


def pg_marks(table: Table, columns: Sequence[str], start: int) -> list[str]:
    """``$start::type, …``: asyncpg's numbered parameters, each cast to its column's type."""
    return [f"${start + i}::{pg_type(table, name)}" for i, name in enumerate(columns)]


def bound(dialect: Dialect, table: Table, columns: Sequence[str], values: Sequence[Any]) -> list[Any]:
    """``values`` as the driver takes them: each through its column's bind processor."""
    processors = _processors(dialect, table, tuple(columns))
    return [value if p is None else p(value) for p, value in zip(processors, values, strict=True)]


@functools.lru_cache(maxsize=64)
def _processors(
    dialect: Dialect, table: Table, columns: tuple[str, ...]
) -> tuple[Callable[[Any], Any] | None, ...]:
    """Each column's bind processor on this dialect (the engine's own: its JSON serializer included)."""
    return tuple(table.c[name].type.dialect_impl(dialect).bind_processor(dialect) for name in columns)


@dataclass(frozen=True, slots=True)
class DriverResult:
    """What a statement returned: its rows (all read) and how many rows it changed."""

    rows: list[Any]
    rowcount: int

    def scalar(self) -> Any:
        return self.rows[0][0] if self.rows else None


async def execute(connection: AsyncConnection, sql: str, parameters: Sequence[Any]) -> DriverResult:
    """One statement in ``connection``'s transaction; a list of parameter rows is an ``executemany``.

    On SQLite it goes straight to Iris's connection (iris.app.persistence.sqlite), which runs it inline,
    without SQLAlchemy's greenlet, execution context and adapter cursor around it (ADR 0055), several
    times per closing transaction. SQLAlchemy still owns the
    transaction (its commit commits what ran here) and its error types are kept (a driver error comes
    out wrapped as ``exec_driver_sql`` wraps it). Anything listening to this connection's statements —
    a sampled run's spans, a bench's counters — gets them through ``exec_driver_sql``, as does
    PostgreSQL, whose statements are one round trip each anyway."""
    many = isinstance(parameters, list)
    raw = _iris_connection(connection)
    if raw is None:
        result = await connection.exec_driver_sql(sql, parameters if many else tuple(parameters))
        return DriverResult(list(result.fetchall()) if result.returns_rows else [], result.rowcount)
    cursor = IrisCursor(raw)
    try:
        if many:
            await cursor.executemany(sql, parameters)
        else:
            await cursor.execute(sql, parameters)
    except sqlite3.Error as exc:
        raise sa_exc.DBAPIError.instance(
            sql, parameters, exc, sqlite3.Error, dialect=connection.dialect, ismulti=many
        ) from exc
    return DriverResult(await cursor.fetchall(), cursor.rowcount)


def _iris_connection(connection: AsyncConnection) -> IrisConnection | None:
    """Iris's SQLite connection under ``connection`` when a statement may go to it directly: checked out
    and valid, and nothing listening to this connection's statements."""
    sync = connection.sync_connection
    if sync is None or sync.invalidated or sync.closed or connection.dialect.name != "sqlite":
        return None
    if sync.dispatch.before_cursor_execute or sync.dispatch.after_cursor_execute:
        return None
    raw = sync.connection.driver_connection
    return raw if isinstance(raw, IrisConnection) else None
