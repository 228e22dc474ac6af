"""What every aggregate's repository shares: UTC timestamps, lenient UUID parsing, and the typed
runner of prebuilt statements.

The lookups every run makes are built once, at import, in each aggregate's module: building a statement
costs as much as running it on SQLite, and a statement object also keeps its cache key (values come in
as bound parameters).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, TypeVar
from uuid import UUID

from sqlalchemy import Select

T = TypeVar("T")


def utcnow() -> dt.datetime:
    """Timezone-aware now; every timestamp Iris writes is UTC."""
    return dt.datetime.now(dt.UTC)


def parse_uuid(value: str) -> UUID | None:
    """``UUID(value)`` or ``None`` for anything that is not one (ids in paths are untrusted)."""
    try:
        return UUID(value)
    except (ValueError, AttributeError, TypeError):
        return None


async def first_or_none(session: Any, stmt: Select[tuple[T]], params: dict[str, Any]) -> T | None:
    """The first row's entity of a prebuilt statement, or ``None`` (typed, unlike ``session.scalar``)."""
    row: T | None = await session.scalar(stmt, params)
    return row
