"""Liveness, readiness and the OpenAPI document."""

from __future__ import annotations

from pathlib import Path

from litestar import Litestar
from litestar.testing import AsyncTestClient

from app.asgi import create_app
from app.settings import Settings
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
    assert body["revision"] == body["head"] == ["0016_search_index_in_batches"]


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
