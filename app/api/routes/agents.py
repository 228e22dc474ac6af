"""Agent-scoped endpoints of seed 002's chat surface (more arrive with the chat issue)."""

from __future__ import annotations

from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.params import FromPath

from app.api.openapi import documented
from app.catalogue.views import picker_models
from app.errors import NotFound
from app.persistence.repositories import AgentRepository, ModelRepository
from app.schemas.catalogue import AgentModels
from providers.registry import ProviderRegistry


class AgentController(Controller):
    """``/api/agents/{slug}``."""

    path = "/api/agents/{slug:str}"
    tags = ["Agents"]
    signature_types = [AgentRepository, ModelRepository, ProviderRegistry]

    @get(
        "/models",
        operation_id="ListAgentModels",
        operation_class=documented(problems={404: ["agent_not_found"]}),
    )
    async def list_models(
        self,
        slug: FromPath[str],
        agent_repo: NamedDependency[AgentRepository],
        model_repo: NamedDependency[ModelRepository],
        registry: NamedDependency[ProviderRegistry],
    ) -> AgentModels:
        """Guest-visible models with their ``type``, plus the agent's default model (public)."""
        agent = await agent_repo.get_by_slug(slug)
        if agent is None:
            raise NotFound(f"No agent '{slug}'.", code="agent_not_found")
        default = (
            await model_repo.get_one_or_none(id=agent.default_model_id) if agent.default_model_id else None
        )
        return picker_models(await model_repo.list_guest_visible(), default, registry)
