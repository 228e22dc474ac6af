"""The catalogue a fresh database starts with: the default agent and the three offline local models.

An existing database gains ``local/multimodal`` (and the default agent's version offering it) from
migration ``0013_multimodal_default`` instead: seeding only ever fills an empty catalogue."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from advanced_alchemy.exceptions import DuplicateKeyError, IntegrityError
from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig

from iris.app.catalogue.agents import AgentDefinition, create_agent
from iris.app.persistence.db import session_scope
from iris.app.persistence.models import ModelRow
from iris.app.persistence.repositories import AgentRepository, ModelRepository
from iris.app.schemas.agents import AgentReasoning

log = logging.getLogger("iris.catalogue")

DEFAULT_AGENT_SLUG = "default"


def default_models() -> list[ModelRow]:
    """The offline local test models; the vision one is the default, the multimodal one also reads
    PDFs and audio (``local/vision`` stays images only)."""
    return [
        ModelRow(
            name="Local vision (offline test model)",
            provider="local",
            model_id="vision",
            type="vision",
            supports_tools=True,
            guest_visible=True,
            options={},
        ),
        ModelRow(
            name="Local multimodal (offline test model)",
            provider="local",
            model_id="multimodal",
            type="multimodal",
            supports_tools=True,
            guest_visible=True,
            options={},
        ),
        ModelRow(
            name="Local text (offline test model)",
            provider="local",
            model_id="text",
            type="text",
            supports_tools=True,
            guest_visible=True,
            options={},
        ),
    ]


def default_agent(models: Sequence[ModelRow]) -> AgentDefinition:
    """The agent every fresh install starts with: the local models (vision by default), every
    built-in tool, open to guests."""
    return AgentDefinition(
        name="Iris",
        description="A helpful assistant that can look at images.",
        instructions="You are Iris, a helpful assistant that can look at images.",
        default_model=models[0],
        models=tuple(models),
        tools=("image_info", "current_time", "delete_attachment"),
        max_tool_iterations=None,
        guest_access=True,
        reasoning=AgentReasoning(),
        enabled=True,
    )


async def seed_catalogue(config: SQLAlchemyAsyncConfig) -> bool:
    """Insert the defaults when the catalogue is empty; returns whether it did.

    Several processes may start at once against one database: the loser of the race hits a
    unique constraint, rolls back and finds the winner's rows.
    """
    try:
        async with session_scope(config) as session:
            models = ModelRepository(session=session)
            agents = AgentRepository(session=session)
            if await models.count() or await agents.count():
                return False
            rows = await models.add_many(default_models())
            await create_agent(agents, DEFAULT_AGENT_SLUG, default_agent(rows))
    except (DuplicateKeyError, IntegrityError):
        log.info("another process seeded the catalogue first")
        return False
    log.info("seeded the default agent and models")
    return True
