"""Liveness, readiness and the OpenAPI document."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.asgi import create_app
from iris.app.persistence.db import create_engine, write_lock
from iris.app.persistence.write_probe import cannot_write
from iris.app.settings import Settings
from tests.support.postgres import free_port


async def test_healthz(client: AsyncTestClient[Litestar]) -> None:
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_readyz_reports_head_revision(client: AsyncTestClient[Litestar]) -> None:
    response = await client.get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ready"
    assert body["revision"] == body["head"] == ["0023_mcp_grants"]


async def test_unmigrated_database_starts_and_is_not_ready(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=str(tmp_path),
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}",
        jwt_secret="s" * 40,
    )
    async with AsyncTestClient(app=create_app(settings, environ={})) as client:
        assert (await client.get("/healthz")).status_code == 200
        response = await client.get("/readyz")
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "migrations_pending"


async def test_unreachable_database_starts_and_is_not_ready(tmp_path: Path) -> None:
    closed = f"postgresql+asyncpg://nobody@127.0.0.1:{free_port()}/iris"
    settings = Settings(data_dir=str(tmp_path), database_url=closed, jwt_secret="s" * 40)
    async with AsyncTestClient(app=create_app(settings, environ={})) as client:
        response = await client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["code"] == "database_unreachable"


async def test_readyz_is_not_ready_while_this_process_cannot_write(settings: Settings) -> None:
    """Issue 41: a process whose every write answered 503 still said ``ready``. Here another connection
    (as another process would) holds the SQLite file: reads still work, the probe write gets no turn."""
    if not settings.effective_database_url.startswith("sqlite"):
        pytest.skip("another process holding the file is SQLite's")
    path = make_url(settings.effective_database_url).database
    assert path is not None
    quick = msgspec.structs.replace(settings, sqlite_lock_timeout_seconds=0.3)
    async with AsyncTestClient(app=create_app(quick, environ={})) as client:
        holder = sqlite3.connect(path, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            response = await client.get("/readyz")
            assert response.status_code == 503, response.text
            assert response.json()["code"] == "database_unwritable"
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert (await client.get("/readyz")).status_code == 200


async def test_a_write_turn_held_past_the_lock_timeout_is_reported_at_once(database_url: str) -> None:
    """A write turn held longer than the lock timeout means every other writer of the process fails:
    the probe says so without waiting for a turn itself."""
    engine = create_engine(database_url, sqlite_lock_timeout=0.05, one_writer=True)
    try:
        if write_lock(engine) is None:
            pytest.skip("the in-process write turn is SQLite's")
        assert await cannot_write(engine) is None
        async with AsyncSession(engine) as held:
            await held.execute(text("UPDATE alembic_version SET version_num = version_num"))
            await asyncio.sleep(0.1)
            reason = await cannot_write(engine)
            assert reason is not None
            assert "write turn has been held" in reason
        assert await cannot_write(engine) is None
    finally:
        await engine.dispose()
