"""The catalogue: models, and the agents that offer them with their immutable versions."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any
from uuid import UUID

from advanced_alchemy.exceptions import wrap_sqlalchemy_exception
from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import and_, bindparam, select

from iris.app.persistence.models import Agent, AgentVersion, CatalogueGeneration, ModelRow
from iris.app.persistence.repositories._common import first_or_none, parse_uuid

# Statements built once (why: see _common).
_MODEL_BY_ID = select(ModelRow).where(ModelRow.id == bindparam("id"))
_MODEL_BY_REF = select(ModelRow).where(
    ModelRow.provider == bindparam("provider"), ModelRow.model_id == bindparam("model_id")
)
_AGENT_BY_SLUG = select(Agent).where(Agent.slug == bindparam("slug"))
_AGENT_WITH_VERSION = select(Agent, AgentVersion).join(
    AgentVersion, and_(AgentVersion.agent_id == Agent.id, AgentVersion.version == Agent.version)
)
_CURRENT_BY_SLUG = _AGENT_WITH_VERSION.where(Agent.slug == bindparam("slug"))
_CURRENT_BY_ID = _AGENT_WITH_VERSION.where(Agent.id == bindparam("id"))
GENERATION = select(CatalogueGeneration.generation).where(CatalogueGeneration.id == 1).scalar_subquery()
"""The catalogue's generation (migration 0014's triggers bump it), as a subquery of a larger read."""
_GENERATION_NOW = select(GENERATION)


class ModelRepository(SQLAlchemyAsyncRepository[ModelRow]):
    """The model catalogue."""

    model_type = ModelRow

    async def list_catalogue(self, *, include_disabled: bool) -> Sequence[ModelRow]:
        """Models ordered by provider and name; disabled ones only when asked."""
        stmt = select(ModelRow).order_by(ModelRow.provider, ModelRow.name)
        if not include_disabled:
            stmt = stmt.where(ModelRow.enabled.is_(True))
        return (await self.session.scalars(stmt)).all()

    async def enabled_providers(self) -> list[str]:
        """The providers the enabled models use: the ones a server loads at start-up."""
        stmt = select(ModelRow.provider).where(ModelRow.enabled.is_(True)).distinct()
        return sorted((await self.session.scalars(stmt)).all())

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

    async def generation(self) -> int:
        """The catalogue's generation, alone: for a caller with no larger read to fold it into."""
        return int((await self.session.execute(_GENERATION_NOW)).scalar_one())

    async def list_all(self) -> Sequence[ModelRow]:
        """Every model, enabled or not (what a process caches, :mod:`iris.app.catalogue.cache`)."""
        return (await self.session.scalars(select(ModelRow))).all()

    async def by_ids(self, ids: Collection[UUID]) -> dict[UUID, ModelRow]:
        """The models among these ids that exist, by id."""
        if not ids:
            return {}
        rows = await self.session.scalars(select(ModelRow).where(ModelRow.id.in_(list(ids))))
        return {row.id: row for row in rows}


class AgentRepository(SQLAlchemyAsyncRepository[Agent]):
    """Agents by slug, and their versions: every change is saved with a new one (:meth:`save_version`)."""

    model_type = Agent

    async def get_by_slug(self, slug: str) -> Agent | None:
        """The agent with this slug, or ``None``."""
        return await first_or_none(self.session, _AGENT_BY_SLUG, {"slug": slug})

    async def current_by_slug(self, slug: str) -> tuple[Agent, AgentVersion] | None:
        """The agent with this slug and its newest version (one statement: every run asks)."""
        row = (await self.session.execute(_CURRENT_BY_SLUG, {"slug": slug})).first()
        return (row[0], row[1]) if row is not None else None

    async def current_by_id(self, agent_id: UUID) -> tuple[Agent, AgentVersion] | None:
        """The agent with this primary key and its newest version."""
        row = (await self.session.execute(_CURRENT_BY_ID, {"id": agent_id})).first()
        return (row[0], row[1]) if row is not None else None

    async def all_current(self) -> Sequence[tuple[Agent, AgentVersion]]:
        """Every agent with its newest version, in one statement (what a process caches)."""
        return [(agent, version) for agent, version in await self.session.execute(_AGENT_WITH_VERSION)]

    async def list_agents(self, *, include_disabled: bool, guests_only: bool) -> Sequence[Agent]:
        """Agents by name; disabled ones only when asked, only guest-accessible ones when asked."""
        stmt = select(Agent).order_by(Agent.name, Agent.slug)
        if not include_disabled:
            stmt = stmt.where(Agent.enabled.is_(True))
        if guests_only:
            stmt = stmt.where(Agent.guest_access.is_(True))
        return (await self.session.scalars(stmt)).all()

    async def list_from_file(self) -> Sequence[Agent]:
        """Agents the models file manages (enabled or not)."""
        return (await self.session.scalars(select(Agent).where(Agent.from_file.is_(True)))).all()

    async def save_version(self, agent: Agent, snapshot: dict[str, Any], *, new: bool) -> AgentVersion:
        """Write the agent (a ``new`` one as version 1, else as its next version) and record that
        version's snapshot; two writers of one agent at once collide on the version's unique key."""
        if new:
            agent.version = 1
            await self.add(agent)
        else:
            agent.version += 1
            await self.update(agent)
        version = AgentVersion(agent_id=agent.id, version=agent.version, snapshot=snapshot)
        with wrap_sqlalchemy_exception(dialect_name=self._dialect.name):  # a collision: DuplicateKeyError
            self.session.add(version)
            await self.session.flush()
        return version

    async def versions(self, agent_id: UUID) -> Sequence[AgentVersion]:
        """Every recorded version of an agent, newest first."""
        stmt = (
            select(AgentVersion)
            .where(AgentVersion.agent_id == agent_id)
            .order_by(AgentVersion.version.desc())
        )
        return (await self.session.scalars(stmt)).all()

    async def uses_model(self, model_id: UUID) -> bool:
        """Whether any agent offers this model or defaults to it (it may then not be deleted)."""
        listed = str(model_id)
        rows = await self.session.execute(select(Agent.default_model_id, Agent.model_ids))
        return any(default == model_id or listed in (ids or ()) for default, ids in rows)
