"""Agents as data: admins define, change and disable agents; callers see the agents they may use; every
change is a new version; slugs, models and tools are checked with stable codes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.catalogue.agent_tools import KnownTools, check_agent_tools
from iris.app.errors import Unprocessable

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]

WRITER: dict[str, Any] = {
    "slug": "writer",
    "name": "Writer",
    "description": "Drafts and edits text.",
    "instructions": "You are a careful copy editor.",
    "models": ["local/text", "local/vision"],
    "tools": ["current_time"],
    "maxToolIterations": 2,
    "guestAccess": False,
    "reasoning": {"enableThinking": True, "reasoningEffort": "low"},
}


async def _create(client: Client, auth: Auth, **changes: Any) -> dict[str, Any]:
    response = await client.post("/api/agents", json={**WRITER, **changes}, headers=auth("root", "admin"))
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def _slugs(client: Client, headers: dict[str, str]) -> list[str]:
    response = await client.get("/api/agents", headers=headers)
    assert response.status_code == 200, response.text
    return [agent["slug"] for agent in response.json()["agents"]]


async def test_an_admin_defines_changes_and_disables_an_agent(client: Client, auth: Auth) -> None:
    admin, alice = auth("root", "admin"), auth("alice")
    created = await _create(client, auth)
    assert created == {
        **{k: v for k, v in WRITER.items() if k != "maxToolIterations"},
        "maxToolIterations": 2,
        "defaultModel": "local/text",  # the first of its models
        "enabled": True,
        "version": 1,
        "createdAt": created["createdAt"],
        "updatedAt": created["updatedAt"],
    }

    seen = (await client.get("/api/agents/writer", headers=alice)).json()
    assert "instructions" not in seen  # the system prompt is the operator's
    assert seen["models"] == ["local/text", "local/vision"]
    assert await _slugs(client, alice) == ["default", "writer"]  # by name: "Iris", "Writer"

    patched = await client.patch(
        "/api/agents/writer",
        json={"instructions": "You are terse.", "defaultModel": "local/vision", "maxToolIterations": None},
        headers=admin,
    )
    assert patched.status_code == 200, patched.text
    assert (patched.json()["version"], patched.json()["defaultModel"]) == (2, "local/vision")
    assert patched.json()["maxToolIterations"] == 5  # back to IRIS_MAX_TOOL_ITERATIONS
    assert patched.json()["name"] == "Writer"  # absent fields untouched
    unchanged = await client.patch("/api/agents/writer", json={"name": "Writer"}, headers=admin)
    assert unchanged.json()["version"] == 2  # no change, no version

    disabled = await client.delete("/api/agents/writer", headers=admin)
    assert disabled.status_code == 204
    assert (await client.delete("/api/agents/writer", headers=admin)).status_code == 204  # already disabled
    hidden = await client.get("/api/agents/writer", headers=alice)
    assert (hidden.status_code, hidden.json()["code"]) == (404, "agent_not_found")
    assert "writer" not in await _slugs(client, alice)
    assert (await client.get("/api/agents/writer/models")).status_code == 404
    as_admin = (await client.get("/api/agents/writer", headers=admin)).json()
    assert (as_admin["enabled"], as_admin["version"]) == (False, 3)
    assert "writer" in await _slugs(client, admin)

    enabled = await client.patch("/api/agents/writer", json={"enabled": True}, headers=admin)
    assert enabled.json()["version"] == 4
    versions = (await client.get("/api/agents/writer/versions", headers=admin)).json()["versions"]
    assert [v["version"] for v in versions] == [4, 3, 2, 1]
    first = versions[-1]["agent"]
    assert first["instructions"] == "You are a careful copy editor."
    assert [m["ref"] for m in first["models"]] == ["local/text", "local/vision"]
    assert first["defaultModel"]["ref"] == "local/text"
    assert versions[1]["agent"]["enabled"] is False
    assert versions[2]["agent"]["instructions"] == "You are terse."


async def test_writes_and_versions_need_an_admin(client: Client, auth: Auth) -> None:
    await _create(client, auth)
    for method, url, body in [
        ("POST", "/api/agents", {**WRITER, "slug": "mine"}),
        ("PATCH", "/api/agents/writer", {"name": "Mine"}),
        ("DELETE", "/api/agents/writer", None),
        ("GET", "/api/agents/writer/versions", None),
    ]:
        as_user = await client.request(method, url, json=body, headers=auth("alice"))
        assert (as_user.status_code, as_user.json()["code"]) == (403, "admin_required"), (method, url)
        assert (await client.request(method, url, json=body)).status_code == 401
    assert "mine" not in await _slugs(client, auth("root", "admin"))
    assert (await client.get("/api/agents/writer", headers=auth("alice"))).json()["name"] == "Writer"


async def test_guests_see_and_read_only_agents_open_to_guests(client: Client, auth: Auth) -> None:
    await _create(client, auth)  # members only
    await _create(client, auth, slug="helpdesk", name="Helpdesk", guestAccess=True)
    token = (await client.post("/api/auth/guest")).json()["accessToken"]
    guest = {"Authorization": f"Bearer {token}"}

    assert set(await _slugs(client, guest)) == {"default", "helpdesk"}
    assert set(await _slugs(client, auth("alice"))) == {"default", "helpdesk", "writer"}
    refused = await client.get("/api/agents/writer", headers=guest)
    assert (refused.status_code, refused.json()["code"]) == (403, "agent_not_for_guests")
    assert (await client.get("/api/agents/helpdesk", headers=guest)).status_code == 200


@pytest.mark.parametrize("slug", ["Writer", "a b", "x" * 65, "", "under_score", "ünï"])
async def test_a_slug_is_lower_case_letters_digits_and_dashes(client: Client, auth: Auth, slug: str) -> None:
    response = await client.post("/api/agents", json={**WRITER, "slug": slug}, headers=auth("root", "admin"))
    assert (response.status_code, response.json()["code"], response.json()["field"]) == (
        422,
        "invalid_agent_slug",
        "slug",
    )


async def test_a_taken_slug_is_409(client: Client, auth: Auth) -> None:
    await _create(client, auth)
    again = await client.post("/api/agents", json=WRITER, headers=auth("root", "admin"))
    assert (again.status_code, again.json()["code"]) == (409, "agent_exists")
    default = await client.post(
        "/api/agents", json={**WRITER, "slug": "default"}, headers=auth("root", "admin")
    )
    assert default.json()["code"] == "agent_exists"


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"models": ["local/text", "openai/nope"]}, "model_not_found", "models[1]"),
        ({"models": ["local/text"], "defaultModel": "local/vision"}, "model_not_in_agent", "defaultModel"),
        ({"models": [], "defaultModel": None}, "validation_failed", "models"),
        ({"models": ["local/text", "local/text"]}, "validation_failed", "models[1]"),
        ({"tools": ["current_time", "nope"]}, "unknown_tool", "tools[1]"),
        ({"tools": ["github__create_issue"]}, "unknown_tool", "tools[0]"),
        ({"tools": ["mcp:github/*"]}, "unknown_tool", "tools[0]"),
        ({"tools": ["not a name"]}, "invalid_tool_name", "tools[0]"),
        ({"tools": ["mcp:GitHub/*"]}, "invalid_tool_name", "tools[0]"),
        ({"tools": ["mcp:github"]}, "invalid_tool_name", "tools[0]"),
        ({"tools": ["current_time", "current_time"]}, "invalid_tool_name", "tools[1]"),
        ({"maxToolIterations": 0}, "validation_failed", "maxToolIterations"),
        ({"reasoning": {"reasoningEffort": "extreme"}}, "validation_failed", "reasoning.reasoningEffort"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
async def test_models_and_tools_are_checked(
    client: Client, auth: Auth, body: dict[str, Any], code: str, field: str
) -> None:
    admin = auth("root", "admin")
    created = await client.post("/api/agents", json={**WRITER, **body}, headers=admin)
    assert (created.status_code, created.json()["code"], created.json()["field"]) == (422, code, field)
    await _create(client, auth)
    patched = await client.patch("/api/agents/writer", json=body, headers=admin)
    assert (patched.status_code, patched.json()["code"]) == (422, code)
    assert (await client.get("/api/agents/writer", headers=admin)).json()["version"] == 1  # nothing changed


async def test_the_picker_lists_exactly_the_agents_models(client: Client, auth: Auth) -> None:
    admin = auth("root", "admin")
    extra = {"name": "Other", "provider": "local", "modelId": "other", "type": "vision", "guestVisible": True}
    assert (await client.post("/api/models", json=extra, headers=admin)).status_code == 201
    await _create(client, auth, models=["local/vision", "local/text"], defaultModel="local/text")

    picker = (await client.get("/api/agents/writer/models")).json()
    refs = {m["id"]: f"{m['provider']}/{m['modelId']}" for m in picker["models"]}
    assert list(refs.values()) == ["local/vision", "local/text"]  # the agent's, in its order
    assert refs[picker["defaultModelId"]] == "local/text"
    assert "local/other" not in refs.values()  # guest-visible, but not this agent's

    vision = next(pk for pk, ref in refs.items() if ref == "local/vision")
    in_use = await client.delete(f"/api/models/{vision}", headers=admin)
    assert (in_use.status_code, in_use.json()["code"]) == (409, "model_in_use")
    await client.patch(f"/api/models/{vision}", json={"enabled": False}, headers=admin)
    after = (await client.get("/api/agents/writer/models")).json()
    assert [m["modelId"] for m in after["models"]] == ["text"]  # a disabled model is not offered
    assert (await client.get("/api/agents/writer", headers=auth("alice"))).json()["models"] == ["local/text"]
    assert (await client.get("/api/agents/writer", headers=admin)).json()["models"] == [
        "local/vision",
        "local/text",
    ]


def test_tool_entries_are_checked_against_one_directory() -> None:
    known = KnownTools.of({"current_time", "github__create_issue"}, servers={"github"})
    entries = ["current_time", "github__create_issue", "mcp:github/*"]
    assert check_agent_tools(entries, known) == entries
    for entry, code in [
        ("github__close_issue", "unknown_tool"),
        ("gitlab__create_issue", "unknown_tool"),
        ("mcp:gitlab/*", "unknown_tool"),
        ("Git Hub__x", "invalid_tool_name"),
        ("mcp:github/create_issue", "invalid_tool_name"),
        ("x" * 65, "invalid_tool_name"),
    ]:
        with pytest.raises(Unprocessable) as caught:
            check_agent_tools(["current_time", entry], known, field="agents[0].tools")
        assert (caught.value.code, caught.value.field) == (code, "agents[0].tools[1]"), entry
