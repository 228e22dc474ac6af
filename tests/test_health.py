"""Liveness, readiness and the OpenAPI document."""

from __future__ import annotations

from litestar import Litestar
from litestar.testing import AsyncTestClient


async def test_healthz(client: AsyncTestClient[Litestar]) -> None:
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_readyz_reports_head_revision(client: AsyncTestClient[Litestar]) -> None:
    response = await client.get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ready"
    assert body["revision"] == body["head"] == ["0001"]
