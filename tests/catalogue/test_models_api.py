"""The model catalogue endpoints and the agent model picker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]

NEW_MODEL: dict[str, Any] = {
    "name": "GPT-4o",
    "provider": "openai",
    "modelId": "gpt-4o",
    "type": "multimodal",
    "supportsTools": True,
    "options": {"baseUrl": "http://127.0.0.1:9/v1", "detail": "auto"},
}


async def _create(client: Client, auth: Auth, **changes: Any) -> dict[str, Any]:
    response = await client.post("/api/models", json={**NEW_MODEL, **changes}, headers=auth("root", "admin"))
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_default_catalogue_lists_both_local_models(client: Client, auth: Auth) -> None:
    response = await client.get("/api/models", headers=auth("alice"))
    assert response.status_code == 200
    models = {m["ref"]: m for m in response.json()["models"]}
    assert set(models) == {"local/vision", "local/multimodal", "local/text"}
    multimodal = models["local/multimodal"]["capabilities"]
    assert multimodal["documents"] == {"pdf": True, "maxPages": 100, "maxBytes": 32 * 1024 * 1024}
    assert multimodal["audio"] == {"mimeTypes": ["audio/wav", "audio/mpeg"], "maxSeconds": 600.0}
    assert models["local/vision"]["capabilities"]["documents"]["pdf"] is False
    assert models["local/vision"]["type"] == "vision"
    assert models["local/text"]["type"] == "text"
    vision = models["local/vision"]["capabilities"]
    assert models["local/vision"]["available"] is True
    assert vision["vision"] is True
    assert vision["tools"] is True
    assert vision["maxImages"] == 4  # the local model takes 16; IRIS_MAX_IMAGES_PER_MESSAGE is 4
    assert vision["imageMimeTypes"] == ["image/png", "image/jpeg", "image/webp"]
    assert vision["urlFetch"] == "none"
    text = models["local/text"]["capabilities"]
    assert (text["vision"], text["maxImages"], text["imageMimeTypes"]) == (False, 0, [])
    assert "options" not in models["local/vision"]  # admins only
    assert None not in models["local/vision"].values()


async def test_admin_creates_updates_and_deletes(client: Client, auth: Auth) -> None:
    created = await _create(client, auth)
    assert created["ref"] == "openai/gpt-4o"
    assert created["options"] == NEW_MODEL["options"]
    assert created["capabilities"]["vision"] is True

    patched = await client.patch(
        f"/api/models/{created['id']}",
        json={"enabled": False, "maxImages": 2},
        headers=auth("root", "admin"),
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["enabled"] is False
    assert patched.json()["capabilities"]["maxImages"] == 2
    assert patched.json()["name"] == "GPT-4o"  # absent fields untouched

    users_view = (await client.get("/api/models", headers=auth("alice"))).json()["models"]
    assert "openai/gpt-4o" not in {m["ref"] for m in users_view}
    admins_view = (await client.get("/api/models", headers=auth("root", "admin"))).json()["models"]
    assert "openai/gpt-4o" in {m["ref"] for m in admins_view}

    cleared = await client.patch(
        f"/api/models/{created['id']}", json={"maxImages": None}, headers=auth("root", "admin")
    )
    assert cleared.json()["capabilities"]["maxImages"] > 2  # the provider's own figure again
    assert "maxImages" not in cleared.json()

    deleted = await client.delete(f"/api/models/{created['id']}", headers=auth("root", "admin"))
    assert deleted.status_code == 204
    gone = await client.delete(f"/api/models/{created['id']}", headers=auth("root", "admin"))
    assert gone.status_code == 404
    assert gone.json()["code"] == "model_not_found"


async def test_writes_need_admin(client: Client, auth: Auth) -> None:
    created = await _create(client, auth)
    for method, url, body in [
        ("POST", "/api/models", NEW_MODEL),
        ("PATCH", f"/api/models/{created['id']}", {"enabled": False}),
        ("DELETE", f"/api/models/{created['id']}", None),
    ]:
        as_user = await client.request(method, url, json=body, headers=auth("alice"))
        assert as_user.status_code == 403, (method, as_user.text)
        assert as_user.json()["code"] == "admin_required"
        anonymous = await client.request(method, url, json=body)
        assert anonymous.status_code == 401
    still_there = await client.get("/api/models", headers=auth("alice"))
    assert "openai/gpt-4o" in {m["ref"] for m in still_there.json()["models"]}


async def test_a_key_variable_name_is_not_a_secret(client: Client, auth: Auth) -> None:
    created = await _create(
        client, auth, options={"baseUrl": "https://openrouter.example/v1", "apiKeyEnv": "OR_KEY"}
    )
    assert created["options"]["apiKeyEnv"] == "OR_KEY"


async def test_duplicate_and_in_use_are_conflicts(client: Client, auth: Auth) -> None:
    await _create(client, auth)
    duplicate = await client.post("/api/models", json=NEW_MODEL, headers=auth("root", "admin"))
    assert duplicate.status_code == 409
    assert duplicate.json()["code"] == "model_exists"

    other = await _create(client, auth, modelId="gpt-4o-mini")
    renamed = await client.patch(
        f"/api/models/{other['id']}", json={"modelId": "gpt-4o"}, headers=auth("root", "admin")
    )
    assert renamed.status_code == 409

    vision = next(
        m
        for m in (await client.get("/api/models", headers=auth("alice"))).json()["models"]
        if m["ref"] == "local/vision"
    )
    in_use = await client.delete(f"/api/models/{vision['id']}", headers=auth("root", "admin"))
    assert in_use.status_code == 409
    assert in_use.json()["code"] == "model_in_use"


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({**NEW_MODEL, "type": "audio"}, "type", "validation_failed"),
        ({**NEW_MODEL, "provider": "Open AI"}, "provider", "validation_failed"),
        ({**NEW_MODEL, "name": ""}, "name", "validation_failed"),
        ({**NEW_MODEL, "maxImages": -1}, "maxImages", "validation_failed"),
        ({**NEW_MODEL, "supportsTools": "yes"}, "supportsTools", "validation_failed"),
        ({**NEW_MODEL, "colour": "blue"}, "colour", "validation_failed"),
        ({k: v for k, v in NEW_MODEL.items() if k != "modelId"}, "modelId", "validation_failed"),
        ({**NEW_MODEL, "options": {"apiKey": "sk-123"}}, "options.apiKey", "secret_in_options"),
        (
            {**NEW_MODEL, "options": {"headers": {"Authorization": "x"}}},
            "options.headers.Authorization",
            None,
        ),
    ],
    ids=[
        "type",
        "provider",
        "empty-name",
        "negative",
        "bool",
        "unknown",
        "missing",
        "api-key",
        "nested-secret",
    ],
)
async def test_invalid_model_bodies_name_the_field(
    client: Client, auth: Auth, body: dict[str, Any], field: str, code: str | None
) -> None:
    response = await client.post("/api/models", json=body, headers=auth("root", "admin"))
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["code"] == (code or "secret_in_options")
    assert problem["field"] == field
    listed = await client.get("/api/models", headers=auth("root", "admin"))
    assert len(listed.json()["models"]) == 3  # nothing was stored


async def test_agent_models_for_the_picker(client: Client, auth: Auth) -> None:
    response = await client.get("/api/agents/default/models")  # public
    assert response.status_code == 200
    body = response.json()
    by_id = {m["id"]: m for m in body["models"]}
    assert {m["type"] for m in body["models"]} == {"vision", "multimodal", "text"}
    assert by_id[body["defaultModelId"]]["type"] == "vision"
    multimodal = next(m for m in body["models"] if m["type"] == "multimodal")
    assert (multimodal["pdf"], multimodal["audio"]) == (True, ["audio/wav", "audio/mpeg"])
    assert set(by_id[body["defaultModelId"]]) == {
        "id",
        "name",
        "modelId",
        "provider",
        "providerName",
        "supportsTools",
        "type",
        "reasoning",
        "pdf",
        "audio",
        "available",
    }
    assert (by_id[body["defaultModelId"]]["pdf"], by_id[body["defaultModelId"]]["audio"]) == (False, [])
    assert by_id[body["defaultModelId"]]["reasoning"] is True  # the local models think when asked

    # The default model is listed (with its type) even when it is not guest-visible.
    await client.patch(
        f"/api/models/{body['defaultModelId']}", json={"guestVisible": False}, headers=auth("root", "admin")
    )
    again = (await client.get("/api/agents/default/models")).json()
    default_entry = [m for m in again["models"] if m["id"] == body["defaultModelId"]]
    assert len(default_entry) == 1
    assert default_entry[0]["type"] == "vision"

    # A disabled default is neither listed nor offered.
    await client.patch(
        f"/api/models/{body['defaultModelId']}", json={"enabled": False}, headers=auth("root", "admin")
    )
    disabled = (await client.get("/api/agents/default/models")).json()
    assert disabled["defaultModelId"] is None
    assert body["defaultModelId"] not in {m["id"] for m in disabled["models"]}


async def test_unknown_agent_is_404(client: Client) -> None:
    response = await client.get("/api/agents/nobody/models")
    assert response.status_code == 404
    assert response.json()["code"] == "agent_not_found"


async def test_guests_see_only_guest_visible_models(client: Client, auth: Auth) -> None:
    await _create(client, auth, guestVisible=False)
    await _create(client, auth, modelId="gpt-4o-mini", guestVisible=True)
    guest = (await client.post("/api/auth/guest")).json()["accessToken"]
    refs = {
        m["ref"]
        for m in (await client.get("/api/models", headers={"Authorization": f"Bearer {guest}"})).json()[
            "models"
        ]
    }
    assert refs == {"local/vision", "local/multimodal", "local/text", "openai/gpt-4o-mini"}


async def test_unknown_option_keys_are_refused_naming_the_accepted_ones(client: Client, auth: Auth) -> None:
    admin = auth("root", "admin")
    typo = await client.post(
        "/api/models", json={**NEW_MODEL, "options": {"base_url": "http://127.0.0.1:9/v1"}}, headers=admin
    )
    assert typo.status_code == 422
    problem = typo.json()
    assert (problem["code"], problem["field"]) == ("option_unknown", "options.base_url")
    assert "base_url" in problem["detail"]
    assert "baseUrl" in problem["detail"]
    accepted = problem["extra"]["accepted"]
    assert {"baseUrl", "apiKeyEnv", "detail", "noKey", "firstTokenTimeoutSeconds", "pricing"} <= set(accepted)
    assert accepted == sorted(accepted)

    created = await _create(client, auth)
    for options, code, field in [
        ({"temprature": 0.2}, "option_unknown", "options.temprature"),
        ({"detail": "ultra"}, "invalid_option", "options.detail"),
        ({"noKey": "yes"}, "invalid_option", "options.noKey"),
        ({"firstTokenTimeoutSeconds": "soon"}, "invalid_option", "options.firstTokenTimeoutSeconds"),
    ]:
        patched = await client.patch(f"/api/models/{created['id']}", json={"options": options}, headers=admin)
        assert (patched.status_code, patched.json()["code"], patched.json()["field"]) == (422, code, field)
    # Moving a model to another provider checks its options against that provider.
    moved = await client.patch(f"/api/models/{created['id']}", json={"provider": "local"}, headers=admin)
    assert (moved.status_code, moved.json()["field"]) == (422, "options.baseUrl")
    unchanged = await client.get("/api/models", headers=admin)
    assert {m["ref"]: m for m in unchanged.json()["models"]}["openai/gpt-4o"]["options"] == NEW_MODEL[
        "options"
    ]


async def test_declared_and_core_options_are_accepted(client: Client, auth: Auth) -> None:
    core = {
        "firstTokenTimeoutSeconds": 20,
        "idleTimeoutSeconds": 5.5,
        "pricing": {"input": 2.5, "output": 10},
    }
    created = await _create(
        client, auth, options={**NEW_MODEL["options"], "maxTokensField": "max_tokens", **core}
    )
    assert created["options"]["pricing"] == core["pricing"]
    local = await _create(
        client, auth, provider="local", modelId="slow", type="text", options={"delayMs": 40}
    )
    assert local["options"] == {"delayMs": 40}
    # A provider that is not installed cannot say what it reads: only secrets and core types are checked.
    absent = await _create(client, auth, provider="acme", modelId="m1", options={"region": "eu"})
    assert (absent["available"], absent["options"]) == (False, {"region": "eu"})


async def test_advertised_max_images_never_exceed_the_per_message_cap(settings: Settings, auth: Auth) -> None:
    """``maxImages`` is the figure Iris enforces: the vendor's, the row's override, and the deployment's
    per-message cap, whichever is lowest, in the catalogue, in /api/providers and at run time."""
    capped = msgspec.structs.replace(settings, max_images_per_message=3)
    async with AsyncTestClient(app=create_app(capped, environ={})) as client:
        low = await _create(client, auth, maxImages=2)
        high = await _create(client, auth, modelId="gpt-4.1", maxImages=10)
        listed = {
            m["ref"]: m for m in (await client.get("/api/models", headers=auth("alice"))).json()["models"]
        }
        assert listed["local/vision"]["capabilities"]["maxImages"] == 3  # the vendor says 16
        assert listed["openai/gpt-4o"]["capabilities"]["maxImages"] == 2  # the row says 2
        assert listed["openai/gpt-4.1"]["capabilities"]["maxImages"] == 3  # the row says 10
        assert (low["capabilities"]["maxImages"], high["capabilities"]["maxImages"]) == (2, 3)
        providers = (await client.get("/api/providers", headers=auth("alice"))).json()["providers"]
        per_model = {m["ref"]: m["capabilities"] for p in providers for m in p["models"]}
        assert per_model["local/vision"]["maxImages"] == 3
        assert per_model["openai/gpt-4.1"]["maxImages"] == 3


async def test_fallbacks_and_retry_policy_are_stored_and_checked(client: Client, auth: Auth) -> None:
    admin = auth("root", "admin")
    created = await _create(
        client, auth, fallbacks=["local/vision"], retryAttempts=3, retryBackoffSeconds=0.25
    )
    assert (created["fallbacks"], created["retryAttempts"], created["retryBackoffSeconds"]) == (
        ["local/vision"],
        3,
        0.25,
    )
    local = await client.get("/api/models", headers=admin)
    plain = next(m for m in local.json()["models"] if m["ref"] == "local/text")
    assert plain["fallbacks"] == []
    assert "retryAttempts" not in plain  # follows IRIS_RETRY_ATTEMPTS

    url = f"/api/models/{created['id']}"
    for body, code, field in [
        ({"fallbacks": ["openai/gpt-4o"]}, "invalid_fallback", "fallbacks[0]"),
        ({"fallbacks": ["local/text", "local/text"]}, "invalid_fallback", "fallbacks[1]"),
        ({"fallbacks": ["openai/nothing-here"]}, "fallback_not_found", "fallbacks[0]"),
        ({"fallbacks": ["not a ref"]}, "validation_failed", None),
        ({"retryAttempts": 0}, "validation_failed", None),
    ]:
        refused = await client.patch(url, json=body, headers=admin)
        assert refused.status_code == 422, body
        assert refused.json()["code"] == code, refused.text
        if field is not None:
            assert refused.json()["field"] == field
    changed = await client.patch(
        url, json={"fallbacks": ["local/text", "local/vision"], "retryAttempts": None}, headers=admin
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["fallbacks"] == ["local/text", "local/vision"]
    assert "retryAttempts" not in changed.json()
