"""A process started on a database whose schema is behind never answers 500: every request that would
use it is a 503 ``migrations_pending`` with a hint, and once ``alembic upgrade head`` has run the same
process serves, without a restart (on SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.persistence.migrations import SchemaGate
from iris.app.settings import Settings
from tests.conftest import JWT_SECRET
from tests.support.databases import migrate
from tests.support.waits import REQUEST_SECONDS, eventually

Auth = Callable[..., dict[str, str]]
DATABASE_ROUTES = [
    ("POST", "/api/auth/guest", None),
    ("GET", "/api/agents/default/models", "alice"),
    ("GET", "/api/models", "alice"),
    ("GET", "/api/agents", "alice"),
    ("GET", "/agent/threads/t-1/messages", "alice"),
    ("POST", "/api/files", "alice"),
    ("GET", "/v1/models", "alice"),
]


def pending(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"]
    body = response.json()
    if "error" in body:  # the OpenAI-compatible /v1 answers in OpenAI's shape
        assert body["error"]["code"] == "migrations_pending"
        return
    assert response.headers["content-type"] == "application/problem+json"
    assert body["code"] == "migrations_pending"
    assert body["extra"]["hint"] == "alembic upgrade head"


async def test_every_database_route_is_503_until_migrated_then_200_without_restart(
    empty_database_url: str, tmp_path: Path, auth: Auth
) -> None:
    settings = Settings(
        data_dir=str(tmp_path / "data"), database_url=empty_database_url, jwt_secret=JWT_SECRET
    )
    app: Litestar = create_app(settings, environ={})
    async with AsyncTestClient(app=app) as client:
        for method, path, user in DATABASE_ROUTES:
            headers = auth(user) if user else {}
            pending(await client.request(method, path, headers=headers))
        assert (await client.get("/healthz")).status_code == 200
        assert (await client.get("/readyz")).json()["code"] == "migrations_pending"
        assert (await client.get("/")).status_code == 200  # the chat page loads and shows the 503s
        assert (await client.get("/schema/openapi.json")).status_code == 200

        await anyio.to_thread.run_sync(migrate, empty_database_url)

        async def serving() -> httpx.Response | None:
            response = await client.get("/api/agents/default/models", headers=auth("alice"))
            if response.status_code != 200:
                pending(response)  # behind until the gate looks again (at most once a second)
                return None
            return response

        answered = await eventually(serving, within=REQUEST_SECONDS, what="served after the upgrade")
        assert {(m["provider"], m["modelId"]) for m in answered.json()["models"]} >= {("local", "vision")}, (
            "seeded"
        )
        assert (await client.post("/api/auth/guest")).status_code == 201
        assert (await client.get("/readyz")).status_code == 200
        gate: SchemaGate = app.state.schema_gate
        assert gate.ready
