"""GET /api/providers and provider availability in the catalogue."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import httpx
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from iris.providers import ProviderContext
from iris.providers.registry import GROUP, ProviderRegistry

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
                EntryPoint(name="local", value="iris.providers.local:create", group=GROUP),
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


async def test_start_up_loads_only_the_providers_enabled_models_use(settings: Settings, auth: Auth) -> None:
    """Start-up imports the providers of the catalogue's enabled models (the default catalogue: only
    ``local``); a model of another provider, added later, finds it loaded on first need, and runs."""
    from iris.providers.local import create as create_local
    from iris.providers.openai.provider import create as create_openai

    built: list[str] = []

    def counted(name: str, create: Callable[[ProviderContext], Any]) -> Callable[[ProviderContext], Any]:
        def build(context: ProviderContext) -> Any:
            built.append(name)
            return create(context)

        return build

    async with httpx.AsyncClient() as http:
        registry = ProviderRegistry(
            ProviderContext(environ={"OPENAI_API_KEY": "sk-1"}, http=http),
            entry_points_=[],
            factories={"local": counted("local", create_local), "openai": counted("openai", create_openai)},
        )
        async with AsyncTestClient(app=create_app(settings, registry=registry)) as client:
            assert built == ["local"]
            assert (await client.get("/api/models", headers=auth("alice"))).status_code == 200
            assert built == ["local"]
            created = await client.post(
                "/api/models",
                json={"name": "GPT", "provider": "openai", "modelId": "gpt-4o", "type": "vision"},
                headers=auth("root", "admin"),
            )
            assert created.status_code == 201, created.text
            assert created.json()["available"] is True
            assert built == ["local", "openai"]
            listed = (await client.get("/api/providers", headers=auth("alice"))).json()
            assert [p["id"] for p in listed["providers"]] == ["local", "openai"]
            assert built == ["local", "openai"]


async def test_preloaded_providers_are_imported_at_start_up_and_others_by_another_instance_on_first_need(
    settings: Settings, auth: Auth
) -> None:
    """``IRIS_PRELOAD_PROVIDERS`` adds providers to what start-up imports; a model of a provider that
    neither imported, enabled through another instance, runs on this one (imported on first need)."""
    import msgspec

    from iris.providers.anthropic import create as create_anthropic
    from iris.providers.local import create as create_local
    from iris.providers.openai.provider import create as create_openai

    built: list[str] = []

    def counted(name: str, create: Callable[[ProviderContext], Any]) -> Callable[[ProviderContext], Any]:
        def build(context: ProviderContext) -> Any:
            built.append(name)
            return create(context)

        return build

    factories = {"local": create_local, "openai": create_openai, "anthropic": create_anthropic}
    async with httpx.AsyncClient() as http:
        registry = ProviderRegistry(
            ProviderContext(environ={"OPENAI_API_KEY": "sk-1"}, http=http),
            entry_points_=[],
            factories={name: counted(name, create) for name, create in factories.items()},
        )
        preloading = msgspec.structs.replace(settings, preload_providers="anthropic")
        async with (
            AsyncTestClient(app=create_app(settings, environ={})) as other,
            AsyncTestClient(app=create_app(preloading, registry=registry)) as client,
        ):
            assert sorted(built) == ["anthropic", "local"]
            admin = auth("root", "admin")
            model = {"name": "GPT", "provider": "openai", "modelId": "gpt-4o", "type": "vision"}
            created = await other.post("/api/models", json={**model, "enabled": True}, headers=admin)
            assert created.status_code == 201, created.text
            listed = await client.get("/api/models", headers=auth("alice"))
            assert listed.status_code == 200
            gpt = next(m for m in listed.json()["models"] if m["ref"] == "openai/gpt-4o")
            assert gpt["available"] is True
            assert sorted(built) == ["anthropic", "local", "openai"]


def test_collection_is_paused_while_a_provider_loads_and_restored_after() -> None:
    import gc

    from iris.providers.registry import collection_paused

    assert gc.isenabled()
    with collection_paused():
        assert not gc.isenabled()
        with collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    assert frozen > 0  # what existed is out of later collections
    gc.unfreeze()
