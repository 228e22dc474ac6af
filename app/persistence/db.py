"""Engine and session configuration, built from settings (never at import time)."""

from __future__ import annotations

import uuid
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import msgspec
from advanced_alchemy.extensions.litestar import (
    AlembicAsyncConfig,
    AsyncSessionConfig,
    SQLAlchemyAsyncConfig,
)
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine

from iris.app.persistence.sqlite import IrisConnection, async_creator
from iris.app.persistence.sqlite_write_turn import PRAGMAS, WriteLock
from iris.app.settings import Settings

# Plain `alembic` and advanced-alchemy's CLI must agree on this name (AA defaults to "alembic_versions").
VERSION_TABLE = "alembic_version"
DEFAULT_SQLITE_LOCK_TIMEOUT = 5.0
POOL_SIZE = 20
"""Connections each engine keeps open (either database); up to :data:`POOL_OVERFLOW` more are opened
when needed and closed when checked in."""
POOL_OVERFLOW = 20
_WRITE_LOCKS: weakref.WeakKeyDictionary[Engine, WriteLock] = weakref.WeakKeyDictionary()


def create_engine(
    url: str,
    *,
    sqlite_lock_timeout: float = DEFAULT_SQLITE_LOCK_TIMEOUT,
    write_wait: Callable[[float], None] | None = None,
    one_writer: bool = False,
) -> AsyncEngine:
    """An async engine; SQLite gets WAL, enforced foreign keys, statements run inline on the loop and
    writers serialised in-process without ever waiting on the loop thread (``iris.app.persistence.sqlite``),
    each waiting at most ``sqlite_lock_timeout`` seconds for its turn (``write_wait`` is told how long
    each write transaction waited); with ``one_writer`` (the app's engine) all of them on one shared
    connection. Not for migrations: they set pragmas on their own connection for their writes.

    JSON columns go through msgspec: run events are JSON, and there are many of them.
    """
    json = {"json_serializer": _json_text, "json_deserializer": msgspec.json.decode}
    if url.startswith("sqlite"):
        # Pooled: a new connection (a file open, five pragmas, the schema parsed again on its first
        # statement) per transaction is wasted work. Sized as PostgreSQL's: a transaction holds its
        # connection while it waits for the write lock, so 16 runs at once check out more than
        # SQLAlchemy's default 5, and each one beyond would be closed when checked in (ADR 0056).
        # Pooled connections must not outlive their event loop, so every engine is disposed with what
        # owns it (the app's by advanced-alchemy's lifespan).
        # Last in, first out: a run's transactions one after another then reuse one connection, whose
        # page cache is still good for reads when nothing else wrote in between.
        database = make_url(url).database or ":memory:"
        creator = async_creator(
            database, lock_timeout=sqlite_lock_timeout, write_wait=write_wait, one_writer=one_writer
        )
        engine = create_async_engine(
            url,
            async_creator=creator,
            pool_size=POOL_SIZE,
            max_overflow=POOL_OVERFLOW,
            pool_use_lifo=True,
            **json,
        )
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        _WRITE_LOCKS[engine.sync_engine] = creator.write_lock  # type: ignore[attr-defined]
        return engine
    # Sized for concurrent runs: each holds a connection only for short transactions (intake, event
    # batches, the terminal write), but with 16+ runs streaming these overlap past the default 5 + 10.
    return create_async_engine(
        url, pool_pre_ping=True, pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW, **json
    )


def write_lock(engine: AsyncEngine) -> WriteLock | None:
    """The in-process write turn of a SQLite engine made here (``None`` on PostgreSQL)."""
    return _WRITE_LOCKS.get(engine.sync_engine)


async def holds_write_turn(session: AsyncSession) -> bool:
    """Whether ``session``'s transaction holds its SQLite engine's write turn (it has written, and not
    yet committed): every other writer of the process waits until it ends (see docs/adr/0001)."""
    if not session.in_transaction():
        return False
    raw = await (await session.connection()).get_raw_connection()
    driver = raw.driver_connection
    return isinstance(driver, IrisConnection) and driver.writing


def _json_text(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    for pragma in PRAGMAS:
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def create_alchemy_config(
    settings: Settings, *, write_wait: Callable[[float], None] | None = None
) -> SQLAlchemyAsyncConfig:
    """advanced-alchemy's config: engine lifespan, one session per request, commit on 2xx.

    Its state keys are this config's own: advanced-alchemy keeps every key it has seen in a class-level
    registry and makes a repeated key unique by recursing once per earlier config, so a process that
    builds many apps (the test suite builds over a thousand) would hit the recursion limit."""
    suffix = uuid.uuid4().hex
    return SQLAlchemyAsyncConfig(
        session_scope_key=f"_iris_db_session_{suffix}",
        engine_app_state_key=f"iris_db_engine_{suffix}",
        session_maker_app_state_key=f"iris_session_maker_{suffix}",
        engine_instance=create_engine(
            settings.effective_database_url,
            sqlite_lock_timeout=settings.sqlite_lock_timeout_seconds,
            write_wait=write_wait,
            one_writer=True,
        ),
        before_send_handler="autocommit",
        session_config=AsyncSessionConfig(expire_on_commit=False),
        alembic_config=AlembicAsyncConfig(version_table_name=VERSION_TABLE, script_location="alembic"),
    )


@asynccontextmanager
async def session_scope(config: SQLAlchemyAsyncConfig) -> AsyncIterator[AsyncSession]:
    """A session outside the request cycle (SSE generators, start-up); commits on success."""
    async with config.get_session() as session:
        try:
            yield session
            await session.commit()
        except BaseException:
            await session.rollback()
            raise
