"""Where the Alembic scripts live and whether a database is at their head (for /readyz)."""

from __future__ import annotations

import functools
from pathlib import Path

from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.ext.asyncio import AsyncEngine

from app.persistence.db import VERSION_TABLE

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
