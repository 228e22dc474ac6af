"""What the writers that skip the ORM share (the intake's and the closing write's rows, issue 26):
statements spelled once at import, and values bound by their columns' own types, so that what they
store is what the ORM would have stored."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects.postgresql.base import PGDialect
from sqlalchemy.engine import Dialect


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
