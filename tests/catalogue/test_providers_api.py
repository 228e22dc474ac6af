"""GET /api/providers and provider availability in the catalogue."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from importlib.metadata import EntryPoint, entry_points

import httpx
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from app.asgi import create_app
from app.settings import Settings
from providers import ProviderContext
from providers.registry import GROUP, ProviderRegistry

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]
BUILT_INS = {"local", "openai", "anthropic", "gemini", "ollama", "litellm"}


async def test_lists_the_six_built_ins_with_capabilities(client: Client, auth: Auth) -> None:
    """The built-ins, and whatever plugins this environment has installed (none is assumed)."""
    response = await client.get("/api/providers", headers=auth("alice"))
    assert response.status_code == 200, response.text
    body = response.json()
    by_id = {p["id"]: p for p in body["providers"]}
    installed = {e.name for e in entry_points(group=GROUP)}
    assert BUILT_INS <= set(by_id) <= installed, body["failed"]
    assert body["failed"] == []
    local = by_id["local"]
    assert local["specVersion"] == "4"
    assert local["declared"]["vision"] is True
    assert {m["ref"]: m["capabilities"]["vision"] for m in local["models"]} == {
        "local/vision": True,
        "local/multimodal": True,
        "local/text": False,
    }
    assert by_id["anthropic"]["declared"]["imageBytesMeasuredOn"] == "base64"
    assert by_id["ollama"]["declared"]["urlFetch"] == "none"
    # The options a models file or PATCH may set, the provider's own and Iris's own, as validated.
    assert local["options"]["delayMs"]["type"] == "integer"
    assert by_id["openai"]["options"]["baseUrl"]["type"] == "string"
    assert by_id["openai"]["options"]["reasoningEffort"]["choices"] == ["low", "medium", "high"]
    assert "delayMs" not in by_id["openai"]["options"]


async def test_needs_a_token(client: Client) -> None:
    assert (await client.get("/api/providers")).status_code == 401


@pytest.fixture
async def broken_registry_client(settings: Settings) -> AsyncIterator[Client]:
    async with httpx.AsyncClient() as http:
        registry = ProviderRegistry(
            ProviderContext(environ={}, http=http),
            entry_points_=[
                EntryPoint(name="local", value="providers.local:create", group=GROUP),
                EntryPoint(name="shiny", value="tests.plugins.broken:raises", group=GROUP),
            ],
        )
        async with AsyncTestClient(app=create_app(settings, registry=registry)) as client:
            yield client


async def test_a_broken_plugin_is_listed_and_breaks_nothing(
    broken_registry_client: Client, auth: Auth
) -> None:
    client = broken_registry_client
    body = (await client.get("/api/providers", headers=auth("alice"))).json()
    assert [p["id"] for p in body["providers"]] == ["local"]
    assert body["failed"] == [
        {
            "id": "shiny",
            "source": "tests.plugins.broken:raises",
            "error": "RuntimeError: cannot reach the licence server",
        }
    ]
    admin = auth("root", "admin")
    created = await client.post(
        "/api/models",
        json={"name": "Shiny", "provider": "shiny", "modelId": "s1", "type": "vision"},
        headers=admin,
    )
    assert created.status_code == 201
    shiny = created.json()
    assert shiny["available"] is False
    assert "capabilities" not in shiny
    assert "shiny" in shiny["unavailableReason"]
    models = {m["ref"]: m for m in (await client.get("/api/models", headers=auth("alice"))).json()["models"]}
    assert models["local/vision"]["available"] is True
    assert models["shiny/s1"]["available"] is False


async def test_allow_list_setting_limits_providers(settings: Settings, auth: Auth) -> None:
    import msgspec

    limited = msgspec.structs.replace(settings, providers="local,openai")
    async with AsyncTestClient(app=create_app(limited, environ={})) as client:
        body = (await client.get("/api/providers", headers=auth("alice"))).json()
    assert {p["id"] for p in body["providers"]} == {"local", "openai"}


def test_providers_never_see_iris_settings(settings: Settings) -> None:
    app = create_app(
        settings, environ={"IRIS_JWT_SECRET": "s3cret", "OPENAI_API_KEY": "sk-1", "PATH": "/bin"}
    )
    registry: ProviderRegistry = app.state.registry
    assert dict(registry.context.environ) == {"OPENAI_API_KEY": "sk-1", "PATH": "/bin"}
