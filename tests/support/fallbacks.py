"""An app whose catalogue has ``openai/gpt-4o`` on OpenAI's loopback fake, with fallbacks: what the
retry, fallback and cool-down tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agents import offer
from tests.support.runs import of_type

OPENAI_KEY = "sk-test-123"
GPT = "openai/gpt-4o"
Client = AsyncTestClient[Litestar]


@asynccontextmanager
async def iris(
    settings: Settings,
    base: str,
    admin: dict[str, str],
    *,
    fallbacks: list[str],
    create: bool = True,
    **model: Any,
) -> AsyncIterator[Client]:
    """An app whose catalogue has ``openai/gpt-4o`` on the fake, with ``fallbacks``, offered by the
    default agent (``create=False``: another process on the same database, the model already there)."""
    app = create_app(settings, environ={"OPENAI_API_KEY": OPENAI_KEY})
    async with AsyncTestClient(app=app) as client:
        if create:
            body = {
                "name": "GPT",
                "provider": "openai",
                "modelId": "gpt-4o",
                "type": "vision",
                "supportsTools": True,
                "options": {"baseUrl": base + "/v1", **model.pop("options", {})},
                "fallbacks": fallbacks,
                "retryAttempts": 2,
                "retryBackoffSeconds": 0,
                **model,
            }
            created = await client.post("/api/models", json=body, headers=admin)
            assert created.status_code == 201, created.text
            assert created.json()["fallbacks"] == fallbacks
            await offer(client, admin, GPT)
        yield client


def finished(events: list[dict[str, Any]]) -> dict[str, Any]:
    (event,) = of_type(events, "RUN_FINISHED")
    metadata: dict[str, Any] = event["metadata"]
    return metadata


def started_on(events: list[dict[str, Any]]) -> str:
    (event,) = of_type(events, "RUN_STARTED")
    model: str = event["metadata"]["iris/model"]
    return model
