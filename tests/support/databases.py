"""Fresh databases per test: a migrated template, copied (SQLite file copy, PostgreSQL ``TEMPLATE``)."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url

from alembic import command
from iris.app.persistence.migrations import alembic_config


def migrate(url: str, revision: str = "head") -> None:
    """``alembic upgrade`` through the repo's own env.py."""
    command.upgrade(alembic_config(url), revision)


def sqlite_url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


def copy_sqlite(template: Path, target: Path) -> str:
    """A copy of the migrated template file; returns its URL."""
    shutil.copyfile(template, target)
    return sqlite_url(target)


class PostgresDatabases:
    """Creates and drops databases on one server, reached through its ``postgres`` database URL."""

    def __init__(self, server_url: str) -> None:
        self.server_url = server_url
        url = make_url(server_url)
        self._dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)

    def url_for(self, name: str) -> str:
        return make_url(self.server_url).set(database=name).render_as_string(hide_password=False)

    def _execute(self, sql: str) -> None:
        async def run() -> None:
            conn = await asyncpg.connect(self._dsn)
            try:
                await conn.execute(sql)
            finally:
                await conn.close()

        asyncio.run(run())

    def create(self, template: str | None = None) -> str:
        """A new database (optionally from a template); returns its name."""
        name = f"iris_test_{uuid.uuid4().hex[:12]}"
        suffix = f" TEMPLATE {template}" if template else ""
        self._execute(f'CREATE DATABASE "{name}"{suffix}')
        return name

    def drop(self, name: str) -> None:
        self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
