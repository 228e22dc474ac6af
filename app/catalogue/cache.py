"""Each process's copy of the catalogue (models, agents at their newest versions), so a run's intake
reads none of it from the database while nothing in it changed.

Valid while the catalogue's generation is the one it was read at: the intake reads the generation in
the same statement as the thread (:meth:`~iris.app.persistence.repositories.SessionRepository.for_intake`),
stateless chat and the OpenAI gateway alone (:meth:`CatalogueCache.current`, one statement),
and database triggers bump it in every transaction that writes ``models``, ``agents`` or
``agent_versions`` (migration ``0014_catalogue_generation``) — whichever process, or a migration or an
operator's SQL, wrote it. A run therefore sees every catalogue change committed before its first
statement, as it did when it read the rows themselves. On a different generation the whole catalogue is
read again (two statements; it is small), after the generation, so what is cached is never older than
the generation it is filed under.

The cached rows are detached ORM objects shared by every run of the process: read them, never change
them (a change goes through a repository in a session of its own, and the trigger invalidates this).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession, async_scoped_session

from iris.app.persistence.models import Agent, AgentVersion, ModelRow
from iris.app.persistence.repositories import AgentRepository, ModelRepository, parse_uuid


class ModelLookup(Protocol):
    """Finding models: a :class:`ModelRepository` or a cached :class:`CatalogueView`."""

    async def get_by_id(self, model_id: UUID) -> ModelRow | None: ...

    async def get_by_ref(self, ref: str) -> ModelRow | None: ...


class AgentLookup(Protocol):
    """Finding agents at their newest version: an :class:`AgentRepository` or a :class:`CatalogueView`."""

    async def current_by_id(self, agent_id: UUID) -> tuple[Agent, AgentVersion] | None: ...

    async def current_by_slug(self, slug: str) -> tuple[Agent, AgentVersion] | None: ...


@dataclass(frozen=True, slots=True)
class CatalogueView:
    """The catalogue at one generation; the same lookups as the repositories it replaces on the intake
    (:class:`~iris.app.persistence.repositories.ModelRepository`, :class:`AgentRepository`)."""

    generation: int
    models_by_id: Mapping[UUID, ModelRow]
    models_by_ref: Mapping[tuple[str, str], ModelRow]
    agents_by_id: Mapping[UUID, tuple[Agent, AgentVersion]]
    agents_by_slug: Mapping[str, tuple[Agent, AgentVersion]]

    async def get_by_id(self, model_id: UUID) -> ModelRow | None:
        return self.models_by_id.get(model_id)

    async def get_by_ref(self, ref: str) -> ModelRow | None:
        """A model by its UUID or by ``provider/modelId`` (split on the first slash)."""
        as_uuid = parse_uuid(ref)
        if as_uuid is not None:
            return self.models_by_id.get(as_uuid)
        provider, sep, model_id = ref.partition("/")
        return self.models_by_ref.get((provider, model_id)) if sep else None

    async def current_by_id(self, agent_id: UUID) -> tuple[Agent, AgentVersion] | None:
        return self.agents_by_id.get(agent_id)

    async def current_by_slug(self, slug: str) -> tuple[Agent, AgentVersion] | None:
        return self.agents_by_slug.get(slug)


Db = AsyncSession | async_scoped_session[AsyncSession]
"""The intake's session (a repository's ``session``)."""


class CatalogueCache:
    """The process's newest :class:`CatalogueView` (one per app, shared by its runs)."""

    def __init__(self) -> None:
        self._view: CatalogueView | None = None

    async def at(self, session: Db, generation: int) -> CatalogueView:
        """The catalogue at ``generation`` (read just now in ``session``'s transaction): the cached one,
        or a fresh read (kept unless a newer generation was cached meanwhile)."""
        current = self._view
        if current is not None and current.generation == generation:
            return current
        view = await _read(session, generation)
        if self._view is None or generation > self._view.generation:
            self._view = view
        return view

    async def current(self, session: Db) -> CatalogueView:
        """The catalogue as of now, for a caller whose first read is not the intake's (stateless chat
        and the OpenAI gateway): one statement for the generation, then :meth:`at`."""
        return await self.at(session, await ModelRepository(session=session).generation())


async def _read(session: Db, generation: int) -> CatalogueView:
    models = await ModelRepository(session=session).list_all()
    agents = await AgentRepository(session=session).all_current()
    for row in models:
        session.expunge(row)  # never expired or refreshed by that session's commit: read-only copies
    for agent, version in agents:
        session.expunge(agent)
        session.expunge(version)
    return CatalogueView(
        generation=generation,
        models_by_id={row.id: row for row in models},
        models_by_ref={(row.provider, row.model_id): row for row in models},
        agents_by_id={agent.id: (agent, version) for agent, version in agents},
        agents_by_slug={agent.slug: (agent, version) for agent, version in agents},
    )
