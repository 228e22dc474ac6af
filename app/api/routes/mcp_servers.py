"""MCP servers as tool sources: admins list, add, change and remove them; ``GET /api/tools`` lists
every tool an admin can give an agent."""

from __future__ import annotations

import msgspec
from litestar import Controller, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from iris.app.api.openapi import documented
from iris.app.catalogue.mcp_servers import server_row
from iris.app.errors import Conflict, NotFound, Unprocessable
from iris.app.mcp.config import MissingVariable, ServerConfig
from iris.app.persistence.models import McpServer
from iris.app.persistence.repositories import McpServerRepository
from iris.app.runs import Toolbox, every_tool, server_out
from iris.app.schemas.mcp import (
    McpServerCreate,
    McpServerList,
    McpServerOut,
    McpServerUpdate,
    ToolList,
    check_secrets,
)
from iris.app.security.auth import Principal

_STDIO_ONLY = ("command", "args", "env")
_HTTP_ONLY = ("url", "headers", "oauth")


class McpServerController(Controller):
    """``/api/mcp-servers`` (admins only)."""

    path = "/api/mcp-servers"
    tags = ["Tools"]
    security = [{"BearerToken": []}]
    signature_types = [Principal, McpServerRepository, Toolbox]

    @get("/", operation_id="ListMcpServers", operation_class=documented(problems={403: ["admin_required"]}))
    async def list_servers(
        self,
        admin: NamedDependency[Principal],
        mcp_repo: NamedDependency[McpServerRepository],
        toolbox: NamedDependency[Toolbox],
    ) -> McpServerList:
        """Every MCP server with its health on this process and the tools it listed last."""
        return McpServerList(servers=[server_out(row, toolbox) for row in await mcp_repo.list_all()])

    @get(
        "/{name:str}",
        operation_id="GetMcpServer",
        operation_class=documented(problems={403: ["admin_required"], 404: ["mcp_server_not_found"]}),
    )
    async def get_server(
        self,
        admin: NamedDependency[Principal],
        name: FromPath[str],
        mcp_repo: NamedDependency[McpServerRepository],
        toolbox: NamedDependency[Toolbox],
    ) -> McpServerOut:
        """One MCP server, its health and its tools."""
        return server_out(await _found(mcp_repo, name), toolbox)

    @post(
        "/",
        operation_id="CreateMcpServer",
        status_code=201,
        operation_class=documented(
            problems={
                403: ["admin_required"],
                409: ["mcp_server_exists"],
                422: ["secret_in_config", "unset_variable"],
            }
        ),
    )
    async def create_server(
        self,
        admin: NamedDependency[Principal],
        data: JSONBody[McpServerCreate],
        mcp_repo: NamedDependency[McpServerRepository],
        toolbox: NamedDependency[Toolbox],
    ) -> McpServerOut:
        """Add a server: ``{"name", "transport": "http", "url", "headers"}`` or ``{"name", "transport":
        "stdio", "command", "args", "env"}``. It is connected when a run or ``GET /api/tools`` first
        needs it."""
        row = server_row(data)
        _check_variables(row, toolbox)
        if await mcp_repo.get_by_name(row.name) is not None:
            raise Conflict(f"There is already an MCP server called {row.name!r}.", code="mcp_server_exists")
        return server_out(await mcp_repo.add(row), toolbox)

    @patch(
        "/{name:str}",
        operation_id="UpdateMcpServer",
        operation_class=documented(
            problems={
                403: ["admin_required"],
                404: ["mcp_server_not_found"],
                422: ["secret_in_config", "field_not_for_transport", "unset_variable"],
            }
        ),
    )
    async def update_server(
        self,
        admin: NamedDependency[Principal],
        name: FromPath[str],
        data: JSONBody[McpServerUpdate],
        mcp_repo: NamedDependency[McpServerRepository],
        toolbox: NamedDependency[Toolbox],
    ) -> McpServerOut:
        """Change the fields present; the next use reconnects with the new settings."""
        row = await _found(mcp_repo, name)
        changes = {k: v for k, v in msgspec.structs.asdict(data).items() if v is not msgspec.UNSET}
        other = _STDIO_ONLY if row.transport == "http" else _HTTP_ONLY
        for key in other:
            if key in changes:
                raise Unprocessable(
                    f"{key!r} is not a setting of a {row.transport} server.",
                    code="field_not_for_transport",
                    field=key,
                )
        check_secrets(changes.get("headers", row.headers), changes.get("env", row.env))
        if changes.get("oauth") is not None:
            changes["oauth"] = msgspec.to_builtins(changes["oauth"])
        for key, value in changes.items():
            setattr(row, key, value)
        _check_variables(row, toolbox)
        row = await mcp_repo.update(row)
        toolbox.pool.retire(row.name)
        return server_out(row, toolbox)

    @delete(
        "/{name:str}",
        operation_id="DeleteMcpServer",
        status_code=204,
        operation_class=documented(problems={403: ["admin_required"], 404: ["mcp_server_not_found"]}),
    )
    async def delete_server(
        self,
        admin: NamedDependency[Principal],
        name: FromPath[str],
        mcp_repo: NamedDependency[McpServerRepository],
        toolbox: NamedDependency[Toolbox],
    ) -> None:
        """Remove a server (a stdio one is stopped); agents naming its tools simply no longer get them."""
        row = await _found(mcp_repo, name)
        await mcp_repo.delete(row.id)
        toolbox.pool.retire(name)


class ToolController(Controller):
    """``GET /api/tools`` (admins only)."""

    path = "/api/tools"
    tags = ["Tools"]
    security = [{"BearerToken": []}]
    signature_types = [Principal, McpServerRepository, Toolbox]

    @get("/", operation_id="ListTools", operation_class=documented(problems={403: ["admin_required"]}))
    async def list_tools(
        self,
        admin: NamedDependency[Principal],
        mcp_repo: NamedDependency[McpServerRepository],
        toolbox: NamedDependency[Toolbox],
    ) -> ToolList:
        """Every tool an admin can give an agent: plugin tools, then each enabled MCP server's (asked
        now, within its connect timeout; a server that is down lists what it listed last), with its
        source, schema and approval rule, and the tool plugins that failed to load."""
        return await every_tool(toolbox, await mcp_repo.list_all(include_disabled=False))


def _check_variables(row: McpServer, toolbox: Toolbox) -> None:
    """422 ``unset_variable`` when an enabled server's headers (HTTP) or env (stdio) name a ``${VAR}``
    this process's environment lacks: it could never connect, and saying so now beats a server whose
    tools silently never appear."""
    if not row.enabled:
        return
    try:
        ServerConfig.from_row(row).check_variables(toolbox.pool.environ)
    except MissingVariable as exc:
        raise Unprocessable(
            f"The {exc}: set the variable in Iris's environment (and restart Iris) first, or give it a"
            " default (${VAR:-default}).",
            code="unset_variable",
            field=exc.field,
        ) from None


async def _found(repo: McpServerRepository, name: str) -> McpServer:
    row = await repo.get_by_name(name)
    if row is None:
        raise NotFound("No such MCP server.", code="mcp_server_not_found")
    return row
