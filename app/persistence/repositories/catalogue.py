"""The catalogue: models and the agents that default to them."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import bindparam, select

from app.persistence.models import Agent, ModelRow
from app.persistence.repositories._common import first_or_none, parse_uuid

# Statements built once (why: see _common).
_MODEL_BY_ID = select(ModelRow).where(ModelRow.id == bindparam("id"))
_MODEL_BY_REF = select(ModelRow).where(
    ModelRow.provider == bindparam("provider"), ModelRow.model_id == bindparam("model_id")
)
_AGENT_BY_ID = select(Agent).where(Agent.id == bindparam("id"))
_AGENT_BY_SLUG = select(Agent).where(Agent.slug == bindparam("slug"))


class ModelRepository(SQLAlchemyAsyncRepository[ModelRow]):
    """The model catalogue."""

    model_type = ModelRow

    async def list_catalogue(self, *, include_disabled: bool) -> Sequence[ModelRow]:
        """Models ordered by provider and name; disabled ones only when asked."""
        stmt = select(ModelRow).order_by(ModelRow.provider, ModelRow.name)
        if not include_disabled:
            stmt = stmt.where(ModelRow.enabled.is_(True))
        return (await self.session.scalars(stmt)).all()

    async def list_guest_visible(self) -> Sequence[ModelRow]:
        """Enabled models marked guest-visible, the list seed 002's model picker shows."""
        stmt = (
            select(ModelRow)
            .where(ModelRow.enabled.is_(True), ModelRow.guest_visible.is_(True))
            .order_by(ModelRow.provider, ModelRow.name)
        )
        return (await self.session.scalars(stmt)).all()

    async def list_from_file(self) -> Sequence[ModelRow]:
        """Rows the models file manages (enabled or not)."""
        return (await self.session.scalars(select(ModelRow).where(ModelRow.from_file.is_(True)))).all()

    async def get_by_ref(self, ref: str) -> ModelRow | None:
        """A model by its UUID or by ``provider/modelId`` (split on the first slash)."""
        as_uuid = parse_uuid(ref)
        if as_uuid is not None:
            return await self.get_by_id(as_uuid)
        provider, sep, model_id = ref.partition("/")
        if not sep or not provider or not model_id:
            return None
        return await first_or_none(self.session, _MODEL_BY_REF, {"provider": provider, "model_id": model_id})

    async def get_by_id(self, model_id: UUID) -> ModelRow | None:
        """A model by its primary key, or ``None``."""
        return await first_or_none(self.session, _MODEL_BY_ID, {"id": model_id})


class AgentRepository(SQLAlchemyAsyncRepository[Agent]):
    """Agents, looked up by slug."""

    model_type = Agent

    async def get_by_slug(self, slug: str) -> Agent | None:
        """The agent with this slug, or ``None``."""
        return await first_or_none(self.session, _AGENT_BY_SLUG, {"slug": slug})

    async def get_by_id(self, agent_id: UUID) -> Agent | None:
        """The agent with this primary key, or ``None``."""
        return await first_or_none(self.session, _AGENT_BY_ID, {"id": agent_id})

    async def uses_model(self, model_id: UUID) -> bool:
        """Whether any agent has this model as its default (it may then not be deleted)."""
        return await self.exists(default_model_id=model_id)
