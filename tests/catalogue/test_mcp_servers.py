"""MCP servers in the catalogue: the admin API (names, 201, 409, credentials only as ``${VAR}``,
transport-specific fields), the models file's ``[[mcpServers]]`` (applied twice changes nothing,
dropped → disabled), and agents' ``tools`` checked against the servers (API and file). Both engines."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import build_registry, build_tool_directory, create_app
from iris.app.catalogue.defaults import seed_catalogue
from iris.app.catalogue.models_file import ModelsFileError, apply_models_file, load_models_file
from iris.app.persistence.db import create_alchemy_config
from iris.app.settings import Settings

Client = AsyncTestClient[Litestar]
HTTP = {
    "name": "github",
    "transport": "http",
    "url": "https://mcp.example.com/mcp",
    "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"},
}
STDIO = {
    "name": "files_1",
    "transport": "stdio",
    "command": "uvx",
    "args": ["mcp-server-files"],
    "env": {"ROOT": "/srv/data"},
}


@pytest.fixture
def app(settings: Settings) -> Litestar:
    """Iris whose environment sets the variable ``HTTP``'s header names (and nothing else)."""
    return create_app(settings, environ={"GITHUB_TOKEN": "ghp-test"})


@pytest.fixture
def admin(auth: Callable[..., dict[str, str]]) -> dict[str, str]:
    return auth("root", role="admin")


async def test_admins_add_list_change_and_remove_servers(client: Client, admin: dict[str, str]) -> None:
    created = await client.post("/api/mcp-servers", json=HTTP, headers=admin)
    assert created.status_code == 201, created.text
    server = created.json()
    assert server["headers"] == {"Authorization": "Bearer ${GITHUB_TOKEN}"}  # as written, never expanded
    assert (server["approval"], server["health"], server["tools"]) == (
        "destructive",
        {"state": "idle", "tools": 0},
        [],
    )
    assert (await client.post("/api/mcp-servers", json=STDIO, headers=admin)).status_code == 201

    taken = await client.post("/api/mcp-servers", json=HTTP, headers=admin)
    assert (taken.status_code, taken.json()["code"]) == (409, "mcp_server_exists")
    listed = (await client.get("/api/mcp-servers", headers=admin)).json()["servers"]
    assert [s["name"] for s in listed] == ["files_1", "github"]
    assert listed[0]["command"] == "uvx"
    assert "url" not in listed[0]

    changed = await client.patch(
        "/api/mcp-servers/github", json={"enabled": False, "callTimeoutSeconds": 5}, headers=admin
    )
    assert changed.status_code == 200
    assert (changed.json()["enabled"], changed.json()["health"]["state"]) == (False, "disabled")
    wrong = await client.patch("/api/mcp-servers/github", json={"command": "x"}, headers=admin)
    assert (wrong.status_code, wrong.json()["code"]) == (422, "field_not_for_transport")

    assert (await client.delete("/api/mcp-servers/github", headers=admin)).status_code == 204
    gone = await client.get("/api/mcp-servers/github", headers=admin)
    assert (gone.status_code, gone.json()["code"]) == (404, "mcp_server_not_found")


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({**HTTP, "name": "Has Caps"}, "validation_failed", "name"),
        ({**HTTP, "name": "x" * 33}, "validation_failed", "name"),
        ({**HTTP, "url": "ftp://example.com"}, "validation_failed", "url"),
        (
            {**HTTP, "headers": {"Authorization": "Bearer sk-live-123"}},
            "secret_in_config",
            "headers.Authorization",
        ),
        ({**STDIO, "env": {"API_KEY": "literal"}}, "secret_in_config", "env.API_KEY"),
        ({**HTTP, "approval": "sometimes"}, "validation_failed", "approval"),
        ({"name": "x", "transport": "carrier-pigeon"}, "validation_failed", None),
    ],
)
async def test_bad_servers_are_refused_with_a_code(
    client: Client, admin: dict[str, str], body: dict[str, Any], code: str, field: str | None
) -> None:
    response = await client.post("/api/mcp-servers", json=body, headers=admin)
    assert response.status_code == 422, response.text
    assert response.json()["code"] == code
    if field is not None:
        assert response.json()["field"] == field


async def test_a_variable_the_environment_lacks_is_refused_when_the_server_is_saved(
    client: Client, admin: dict[str, str]
) -> None:
    """A server that could never connect is not saved (it used to be, and its tools never appeared)."""
    unset = {**HTTP, "headers": {"Authorization": "Bearer ${CHART_TOKEN}"}}
    refused = await client.post("/api/mcp-servers", json=unset, headers=admin)
    problem = refused.json()
    assert (refused.status_code, problem["code"], problem["field"]) == (
        422,
        "unset_variable",
        "headers.Authorization",
    )
    assert "${CHART_TOKEN}" in problem["detail"]
    stdio = {**STDIO, "env": {"ROOT": "${DATA_ROOT}"}}
    assert (await client.post("/api/mcp-servers", json=stdio, headers=admin)).json()["field"] == "env.ROOT"
    defaulted = {**STDIO, "env": {"ROOT": "${DATA_ROOT:-/srv/data}"}}
    assert (await client.post("/api/mcp-servers", json=defaulted, headers=admin)).status_code == 201
    disabled = {**unset, "enabled": False}  # it does not connect, so nothing is missing yet
    assert (await client.post("/api/mcp-servers", json=disabled, headers=admin)).status_code == 201
    enabling = await client.patch("/api/mcp-servers/github", json={"enabled": True}, headers=admin)
    assert (enabling.status_code, enabling.json()["code"]) == (422, "unset_variable")
    assert (await client.get("/api/mcp-servers/github", headers=admin)).json()["enabled"] is False
    fixed = {"enabled": True, "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}
    assert (await client.patch("/api/mcp-servers/github", json=fixed, headers=admin)).status_code == 200


async def test_only_admins_see_or_change_servers(client: Client, auth: Callable[..., dict[str, str]]) -> None:
    alice = auth("alice")
    for method, path in (("get", "/api/mcp-servers"), ("post", "/api/mcp-servers"), ("get", "/api/tools")):
        response = await client.request(method, path, json=HTTP if method == "post" else None, headers=alice)
        assert (response.status_code, response.json()["code"]) == (403, "admin_required")


FILE = """
[[mcpServers]]
name = "charts"
transport = "stdio"
command = "python"
args = ["chart_server.py"]
approval = "never"

[[mcpServers]]
name = "github"
transport = "http"
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer ${GITHUB_TOKEN}" }
toolApproval = { create_issue = "always" }

[[agents]]
slug = "helper"
name = "Helper"
models = ["local/text"]
tools = ["current_time", "mcp:charts/*", "github__search"]
"""


async def _apply(settings: Settings, path: Path) -> list[str]:
    alchemy = create_alchemy_config(settings)
    async with httpx.AsyncClient() as http:
        try:
            await seed_catalogue(alchemy)
            tools = build_tool_directory()
            return await apply_models_file(
                alchemy, load_models_file(path, build_registry(settings, {}, http), tools), tools
            )
        finally:
            await alchemy.get_engine().dispose()


async def test_the_models_file_declares_servers_idempotently(
    settings: Settings, tmp_path: Path, client: Client, admin: dict[str, str]
) -> None:
    path = tmp_path / "models.toml"
    path.write_text(FILE)
    first = await _apply(settings, path)
    assert "added MCP server charts" in first
    assert "added MCP server github" in first
    assert "added agent helper" in first
    assert await _apply(settings, path) == []  # applied twice: nothing changes

    servers = {s["name"]: s for s in (await client.get("/api/mcp-servers", headers=admin)).json()["servers"]}
    assert servers["charts"]["fromFile"] is True
    assert servers["github"]["toolApproval"] == {"create_issue": "always"}

    without_github = FILE.split('[[mcpServers]]\nname = "github"')[0] + FILE[FILE.index("[[agents]]") :]
    path.write_text(without_github.replace(', "github__search"', ""))
    assert "disabled MCP server github (no longer in the file)" in await _apply(settings, path)
    github = (await client.get("/api/mcp-servers/github", headers=admin)).json()
    assert github["enabled"] is False


async def test_a_file_server_naming_an_unset_variable_shows_down_with_the_reason(
    settings: Settings, tmp_path: Path, client: Client, admin: dict[str, str]
) -> None:
    """The file is applied whatever the environment holds; health names what is missing, unconnected."""
    path = tmp_path / "models.toml"
    path.write_text(FILE.replace("${GITHUB_TOKEN}", "${CHART_TOKEN}"))
    assert "added MCP server github" in await _apply(settings, path)
    health = (await client.get("/api/mcp-servers/github", headers=admin)).json()["health"]
    assert health == {
        "state": "down",
        "tools": 0,
        "error": "header Authorization names ${CHART_TOKEN}, which is not set on the server",
    }


def test_a_literal_credential_in_the_file_is_refused(settings: Settings, tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text(FILE.replace("Bearer ${GITHUB_TOKEN}", "Bearer ghp_live"))
    with pytest.raises(ModelsFileError, match=r"mcpServers\[1\] \(github\).*secret_in_config"):
        load_models_file(path, build_registry(settings, {}, httpx.AsyncClient()), build_tool_directory())


async def test_an_agent_in_the_file_names_only_servers_the_catalogue_has(
    settings: Settings, tmp_path: Path, client: Client, admin: dict[str, str]
) -> None:
    """The file's own servers and those added through the API pass; any other is ``unknown_tool``."""
    assert (await client.post("/api/mcp-servers", json=HTTP, headers=admin)).status_code == 201
    path = tmp_path / "models.toml"
    agents = FILE[FILE.index("[[agents]]") :]
    path.write_text(FILE.split('[[mcpServers]]\nname = "github"')[0] + agents)  # github: from the API
    assert "added agent helper" in await _apply(settings, path)

    path.write_text(agents.replace("github__search", "gitlab__search"))
    with pytest.raises(ModelsFileError, match=r"agents\[0\] \(helper\): .*gitlab.*\[unknown_tool\]"):
        await _apply(settings, path)


async def test_an_agent_takes_a_servers_tools_and_whole_servers_through_the_api(
    client: Client, admin: dict[str, str]
) -> None:
    assert (await client.post("/api/mcp-servers", json=HTTP, headers=admin)).status_code == 201
    body = {"slug": "coder", "name": "Coder", "models": ["local/text"]}
    tools = ["current_time", "github__create_issue", "mcp:github/*"]
    created = await client.post("/api/agents", json={**body, "tools": tools}, headers=admin)
    assert created.status_code == 201, created.text
    assert created.json()["tools"] == tools
    for entry in ("gitlab__create_issue", "mcp:gitlab/*", "no_such_plugin"):
        refused = await client.patch("/api/agents/coder", json={"tools": [entry]}, headers=admin)
        assert (refused.status_code, refused.json()["code"]) == (422, "unknown_tool"), entry
