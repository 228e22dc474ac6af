"""The catalogue a fresh database starts with: the default agent and the two offline local models."""

from __future__ import annotations

import logging

from advanced_alchemy.exceptions import DuplicateKeyError, IntegrityError
from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig

from app.persistence.db import session_scope
from app.persistence.models import Agent, ModelRow
from app.persistence.repositories import AgentRepository, ModelRepository

log = logging.getLogger("iris.catalogue")

DEFAULT_AGENT_SLUG = "default"


def default_models() -> list[ModelRow]:
    """The two offline local test models; the vision one is the default."""
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
            name="Local text (offline test model)",
            provider="local",
            model_id="text",
            type="text",
            supports_tools=True,
            guest_visible=True,
            options={},
        ),
    ]


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
            await agents.add(
                Agent(
                    slug=DEFAULT_AGENT_SLUG,
                    name="Iris",
                    system_prompt="You are Iris, a helpful assistant that can look at images.",
                    default_model_id=rows[0].id,
                    guest_access=True,
                    enabled_tools=["image_info", "current_time", "delete_attachment"],
                )
            )
    except (DuplicateKeyError, IntegrityError):
        log.info("another process seeded the catalogue first")
        return False
    log.info("seeded the default agent and models")
    return True
