"""Engine and session configuration, built from settings (never at import time)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
from advanced_alchemy.extensions.litestar import (
    AlembicAsyncConfig,
    AsyncSessionConfig,
    SQLAlchemyAsyncConfig,
)
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine

from app.settings import Settings

# Plain `alembic` and advanced-alchemy's CLI must agree on this name (AA defaults to "alembic_versions").
VERSION_TABLE = "alembic_version"


def create_engine(url: str) -> AsyncEngine:
    """An async engine; SQLite gets WAL, enforced foreign keys and a busy timeout for concurrent writers.

    JSON columns go through msgspec: run events are JSON, and there are many of them.
    """
    json = {"json_serializer": _json_text, "json_deserializer": msgspec.json.decode}
    if url.startswith("sqlite"):
        # Pooled: a new aiosqlite connection (a thread, a file open, four pragmas) per transaction cost
        # a quarter of a run's time. Pooled connections must not outlive their event loop, so every
        # engine is disposed with what owns it (the app's by advanced-alchemy's lifespan).
        engine = create_async_engine(url, connect_args={"timeout": 30}, **json)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    return create_async_engine(url, pool_pre_ping=True, **json)


def _json_text(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def create_alchemy_config(settings: Settings) -> SQLAlchemyAsyncConfig:
    """advanced-alchemy's config: engine lifespan, one session per request, commit on 2xx."""
    return SQLAlchemyAsyncConfig(
        engine_instance=create_engine(settings.effective_database_url),
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
