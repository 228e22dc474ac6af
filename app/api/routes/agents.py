"""Agents as data: everyone signed in lists the agents they may use, admins define them; the model
picker of one agent is public (seed 002's ``GET /api/agents/{slug}/models``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from uuid import UUID

import msgspec
from litestar import Controller, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from iris.app.api.openapi import documented
from iris.app.catalogue.agent_tools import ToolDirectory
from iris.app.catalogue.agents import (
    agent_out,
    check_changes,
    check_definition,
    check_slug,
    create_agent,
    current_definition,
    save_changes,
)
from iris.app.catalogue.views import picker_models
from iris.app.errors import Conflict, Forbidden, NotFound
from iris.app.persistence.models import Agent, ModelRow
from iris.app.persistence.repositories import AgentRepository, McpServerRepository, ModelRepository
from iris.app.runs import Toolbox
from iris.app.schemas.agents import (
    AgentCreate,
    AgentList,
    AgentOut,
    AgentSnapshot,
    AgentUpdate,
    AgentVersionList,
    AgentVersionOut,
)
from iris.app.schemas.catalogue import AgentModels
from iris.app.schemas.mcp import PromptArgumentOut, PromptList, PromptOut
from iris.app.security.auth import Principal
from iris.app.settings import Settings
from iris.providers.registry import ProviderRegistry

_DEFINITION_CHECKS = ("invalid_tool_name", "model_not_found", "model_not_in_agent", "unknown_tool")
"""What a definition is checked for (:mod:`iris.app.catalogue.agents`)."""


class AgentController(Controller):
    """``/api/agents``: list and read (any token), create, change and disable (admins)."""

    path = "/api/agents"
    tags = ["Agents"]
    security = [{"BearerToken": []}]
    signature_types = [Principal, AgentRepository, ModelRepository, ToolDirectory, Settings]

    @get("/", operation_id="ListAgents", operation_class=documented())
    async def list_agents(
        self,
        principal: NamedDependency[Principal],
        agent_repo: NamedDependency[AgentRepository],
        model_repo: NamedDependency[ModelRepository],
        settings: NamedDependency[Settings],
    ) -> AgentList:
        """The agents the caller may use: enabled ones (guests: those open to guests); admins see
        every agent, disabled ones included, with its instructions."""
        rows = await agent_repo.list_agents(
            include_disabled=principal.is_admin, guests_only=principal.is_guest
        )
        models = await model_repo.by_ids(_model_ids(rows))
        return AgentList(agents=[_out(row, models, settings, principal) for row in rows])

    @post(
        "/",
        operation_id="CreateAgent",
        status_code=201,
        operation_class=documented(
            problems={
                403: ["admin_required"],
                409: ["agent_exists", "conflict"],
                422: ["invalid_agent_slug", *_DEFINITION_CHECKS],
            }
        ),
    )
    async def create_agent(
        self,
        admin: NamedDependency[Principal],
        data: JSONBody[AgentCreate],
        agent_repo: NamedDependency[AgentRepository],
        model_repo: NamedDependency[ModelRepository],
        tool_directory: NamedDependency[ToolDirectory],
        settings: NamedDependency[Settings],
    ) -> AgentOut:
        """Define an agent (version 1)."""
        slug = check_slug(data.slug)
        definition = await check_definition(data, model_repo, tool_directory)
        if await agent_repo.get_by_slug(slug) is not None:
            raise Conflict(f"There is already an agent {slug!r}.", code="agent_exists", field="slug")
        row = await create_agent(agent_repo, slug, definition)
        return await _answer(row, model_repo, settings, admin)

    @get(
        "/{slug:str}",
        operation_id="GetAgent",
        operation_class=documented(problems={403: ["agent_not_for_guests"], 404: ["agent_not_found"]}),
    )
    async def get_agent(
        self,
        slug: FromPath[str],
        principal: NamedDependency[Principal],
        agent_repo: NamedDependency[AgentRepository],
        model_repo: NamedDependency[ModelRepository],
        settings: NamedDependency[Settings],
    ) -> AgentOut:
        """One agent the caller may use."""
        row = await _found(agent_repo, slug, principal)
        if principal.is_guest and not row.guest_access:
            raise Forbidden("Guests may not use this agent; sign in.", code="agent_not_for_guests")
        return await _answer(row, model_repo, settings, principal)

    @patch(
        "/{slug:str}",
        operation_id="UpdateAgent",
        operation_class=documented(
            problems={
                403: ["admin_required"],
                404: ["agent_not_found"],
                409: ["conflict"],
                422: _DEFINITION_CHECKS,
            }
        ),
    )
    async def update_agent(
        self,
        slug: FromPath[str],
        admin: NamedDependency[Principal],
        data: JSONBody[AgentUpdate],
        agent_repo: NamedDependency[AgentRepository],
        model_repo: NamedDependency[ModelRepository],
        tool_directory: NamedDependency[ToolDirectory],
        settings: NamedDependency[Settings],
    ) -> AgentOut:
        """Change the fields present in the body; any change is a new version (runs already made keep
        naming the version they ran with). ``"enabled": true`` enables a disabled agent again."""
        row = await _found(agent_repo, slug, admin)
        changes = {k: v for k, v in msgspec.structs.asdict(data).items() if v is not msgspec.UNSET}
        await save_changes(agent_repo, row, await check_changes(row, changes, model_repo, tool_directory))
        return await _answer(row, model_repo, settings, admin)

    @delete(
        "/{slug:str}",
        operation_id="DisableAgent",
        status_code=204,
        operation_class=documented(
            problems={403: ["admin_required"], 404: ["agent_not_found"], 409: ["conflict"]}
        ),
    )
    async def disable_agent(
        self,
        slug: FromPath[str],
        admin: NamedDependency[Principal],
        agent_repo: NamedDependency[AgentRepository],
        model_repo: NamedDependency[ModelRepository],
    ) -> None:
        """Disable an agent (a new version): it takes no new runs and users no longer see it. Nothing is
        deleted: its sessions keep their history, and ``PATCH`` with ``"enabled": true`` brings it back."""
        row = await _found(agent_repo, slug, admin)
        if row.enabled:
            await save_changes(
                agent_repo, row, replace(await current_definition(row, model_repo), enabled=False)
            )

    @get(
        "/{slug:str}/versions",
        operation_id="ListAgentVersions",
        operation_class=documented(problems={403: ["admin_required"], 404: ["agent_not_found"]}),
    )
    async def list_versions(
        self,
        slug: FromPath[str],
        admin: NamedDependency[Principal],
        agent_repo: NamedDependency[AgentRepository],
    ) -> AgentVersionList:
        """Every version of an agent, newest first: what each run pointing at it ran with."""
        row = await _found(agent_repo, slug, admin)
        return AgentVersionList(
            versions=[
                AgentVersionOut(
                    version=v.version,
                    created_at=v.created_at,
                    agent=msgspec.convert(v.snapshot, AgentSnapshot),
                )
                for v in await agent_repo.versions(row.id)
            ]
        )


class AgentPickerController(Controller):
    """``/api/agents/{slug}/models``: public, as seed 002's model picker is."""

    path = "/api/agents/{slug:str}/models"
    tags = ["Agents"]
    signature_types = [AgentRepository, ModelRepository, ProviderRegistry]

    @get("/", operation_id="ListAgentModels", operation_class=documented(problems={404: ["agent_not_found"]}))
    async def list_models(
        self,
        slug: FromPath[str],
        agent_repo: NamedDependency[AgentRepository],
        model_repo: NamedDependency[ModelRepository],
        registry: NamedDependency[ProviderRegistry],
    ) -> AgentModels:
        """Exactly the models the agent offers (enabled ones, in its order) with their ``type``, and its
        default model."""
        row = await agent_repo.get_by_slug(slug)
        if row is None or not row.enabled:
            raise NotFound(f"No agent {slug!r}.", code="agent_not_found")
        models = await model_repo.by_ids(_model_ids([row]))
        offered = [models[UUID(pk)] for pk in row.model_ids if UUID(pk) in models]
        default = models.get(row.default_model_id) if row.default_model_id else None
        await registry.ready({model.provider for model in offered})
        return picker_models(offered, default, registry)


class AgentPromptController(Controller):
    """``/api/agents/{slug}/prompts``: the prompts of the agent's MCP servers, for whoever may use it."""

    path = "/api/agents/{slug:str}/prompts"
    tags = ["Agents"]
    security = [{"BearerToken": []}]
    signature_types = [Principal, AgentRepository, McpServerRepository, Toolbox]

    @get(
        "/",
        operation_id="ListAgentPrompts",
        operation_class=documented(problems={403: ["agent_not_for_guests"], 404: ["agent_not_found"]}),
    )
    async def list_prompts(
        self,
        slug: FromPath[str],
        principal: NamedDependency[Principal],
        agent_repo: NamedDependency[AgentRepository],
        mcp_repo: NamedDependency[McpServerRepository],
        toolbox: NamedDependency[Toolbox],
    ) -> PromptList:
        """Every prompt the agent's MCP servers list now, as ``{server}__{prompt}`` with its arguments
        (servers are connected, each within its connect timeout; one that cannot answer is in ``failed``)."""
        row = await _found(agent_repo, slug, principal)
        if principal.is_guest and not row.guest_access:
            raise Forbidden("Guests may not use this agent; sign in.", code="agent_not_for_guests")
        prompts, failed = await toolbox.agent_prompts(row.tools, mcp_repo, principal.user_id)
        return PromptList(
            prompts=[
                PromptOut(
                    name=p.qualified_name,
                    server=p.server,
                    title=p.title,
                    description=p.description,
                    arguments=[
                        PromptArgumentOut(name=a.name, required=a.required, description=a.description)
                        for a in p.arguments
                    ],
                )
                for p in prompts
            ],
            failed=failed or None,
        )


async def _found(agents: AgentRepository, slug: str, principal: Principal) -> Agent:
    """The agent, or 404: a disabled one exists for admins only."""
    row = await agents.get_by_slug(slug)
    if row is None or not (row.enabled or principal.is_admin):
        raise NotFound(f"No agent {slug!r}.", code="agent_not_found")
    return row


def _model_ids(rows: Sequence[Agent]) -> set[UUID]:
    ids = {UUID(pk) for row in rows for pk in row.model_ids}
    return ids | {row.default_model_id for row in rows if row.default_model_id is not None}


def _out(row: Agent, models: dict[UUID, ModelRow], settings: Settings, principal: Principal) -> AgentOut:
    return agent_out(row, models, default_iterations=settings.max_tool_iterations, admin=principal.is_admin)


async def _answer(row: Agent, models: ModelRepository, settings: Settings, principal: Principal) -> AgentOut:
    return _out(row, await models.by_ids(_model_ids([row])), settings, principal)
