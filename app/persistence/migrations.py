"""Where the Alembic scripts live, whether a database is at their head (for /readyz and every request
until it is), and the upgrade ``serve`` runs by itself on the embedded SQLite database."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.ext.asyncio import AsyncEngine

from alembic import command
from iris.app.persistence.db import VERSION_TABLE, create_engine

REPO_ROOT = Path(__file__).resolve().parents[2]
ALEMBIC_INI = REPO_ROOT / "alembic.ini"


def alembic_config(database_url: str | None = None) -> Config:
    """The repo's ``alembic.ini``; ``database_url`` overrides the URL env.py would read from settings."""
    config = Config(str(ALEMBIC_INI))
    config.set_main_option("script_location", str(REPO_ROOT / "alembic"))
    if database_url:
        config.set_main_option("sqlalchemy.url", database_url)
    return config


@functools.cache
def head_revisions() -> frozenset[str]:
    """The revisions ``alembic upgrade head`` would reach (scripts do not change while running)."""
    return frozenset(ScriptDirectory.from_config(alembic_config()).get_heads())


async def current_revisions(engine: AsyncEngine) -> frozenset[str]:
    """The revisions the database is stamped with (empty when never migrated)."""
    async with engine.connect() as conn:
        heads = await conn.run_sync(
            lambda sync_conn: MigrationContext.configure(
                sync_conn, opts={"version_table": VERSION_TABLE}
            ).get_current_heads()
        )
    return frozenset(heads)


async def _revisions_of(database_url: str) -> frozenset[str]:
    engine = create_engine(database_url)
    try:
        return await current_revisions(engine)
    finally:
        await engine.dispose()


def upgrade_to_head(database_url: str) -> frozenset[str] | None:
    """``alembic upgrade head`` on ``database_url`` (no event loop may be running); the revisions it
    started from, or ``None`` when the database was at head already and nothing ran."""
    before = asyncio.run(_revisions_of(database_url))
    if before == head_revisions():
        return None
    command.upgrade(alembic_config(database_url), "head")
    return before


class SchemaGate:
    """Whether requests may use the database: not until its schema is at the migrations' head.

    A process may start on a database that is behind (``serve`` before ``alembic upgrade head``); it
    then answers 503 ``migrations_pending`` instead of failing on missing tables, and asks again at
    most every ``recheck_seconds``. The first time it finds the schema at head it runs ``on_ready``
    (seed the catalogue, start keeping runs) once, and from then on costs one attribute read.
    """

    def __init__(
        self, engine: AsyncEngine, on_ready: Callable[[], Awaitable[None]], *, recheck_seconds: float = 1.0
    ) -> None:
        self.ready = False
        self._engine = engine
        self._on_ready = on_ready
        self._recheck_seconds = recheck_seconds
        self._next_check = 0.0
        self._lock = anyio.Lock()

    async def check(self) -> bool:
        """True once the schema is at head (and ``on_ready`` has run); False while it is behind. A
        database that does not answer raises (SQLAlchemyError, OSError), and is asked again next time."""
        if self.ready:
            return True
        if time.monotonic() < self._next_check:
            return False
        async with self._lock:
            if self.ready or time.monotonic() < self._next_check:
                return self.ready
            if await current_revisions(self._engine) != head_revisions():
                self._next_check = time.monotonic() + self._recheck_seconds
                return False
            await self._on_ready()
            self.ready = True
            return True
