"""Alembic environment: async engine, URL from IRIS_* settings unless the config names one."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from advanced_alchemy.types import GUID, DateTimeUTC
from sqlalchemy.engine import Connection
from sqlalchemy.types import TypeEngine

from alembic import context
from iris.app.persistence import models
from iris.app.persistence.db import VERSION_TABLE, create_engine
from iris.app.settings import load_settings

config = context.config
target_metadata = models.ModelRow.metadata  # every table shares advanced-alchemy's registry


def _database_url() -> str:
    configured = config.get_main_option("sqlalchemy.url")
    if configured:
        return configured
    settings = load_settings(os.environ)
    settings.data_path.mkdir(parents=True, exist_ok=True)
    return settings.effective_database_url


def _compare_type(
    _context: Any,
    _inspected_column: Any,
    _metadata_column: Any,
    _inspected_type: TypeEngine[Any],
    metadata_type: TypeEngine[Any],
) -> bool | None:
    """advanced-alchemy's portable types reflect as their storage type (BINARY, DATETIME):
    not a change. Everything else gets Alembic's normal comparison."""
    if isinstance(metadata_type, GUID | DateTimeUTC):
        return False
    return None


SEARCH_TABLES = "search_"
"""The search index (migration 0009): engine-specific tables kept by triggers, not mapped by the ORM."""


def _include_name(name: str | None, type_: str, _parent_names: Any) -> bool:
    """Autogenerate compares the mapped tables only: the ``search_*`` tables (and FTS5's own tables
    behind them on SQLite) belong to the migrations."""
    return not (type_ == "table" and name is not None and name.startswith(SEARCH_TABLES))


def _configure(connection: Connection | None = None, url: str | None = None) -> None:
    context.configure(
        connection=connection,
        url=url,
        target_metadata=target_metadata,
        version_table=VERSION_TABLE,
        render_as_batch=True,  # SQLite can only ALTER by copying the table
        compare_type=_compare_type,
        include_name=_include_name,
        literal_binds=connection is None,
    )


def _run_sync(connection: Connection) -> None:
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        # Batch mode alters a SQLite table by copying it and dropping the old one; with foreign keys on,
        # dropping a parent (agents, sessions, runs) would cascade into its children and delete them.
        # The pragma only takes effect outside a transaction, so it is the connection's first statement.
        connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
    _configure(connection)
    with context.begin_transaction():
        context.run_migrations()
        if sqlite and (broken := connection.exec_driver_sql("PRAGMA foreign_key_check").all()):
            raise RuntimeError(f"the migration left rows whose foreign keys point nowhere: {broken[:5]}")


async def _run_async() -> None:
    engine = create_engine(_database_url())
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run_sync)
            await connection.commit()
    finally:
        await engine.dispose()


if context.is_offline_mode():
    _configure(url=_database_url())
    with context.begin_transaction():
        context.run_migrations()
else:
    asyncio.run(_run_async())
