"""Keeps SQLite's full-text index up with the search documents that writes queue (migration 0016).

A run's messages no longer reach the FTS5 index inside the run's own transactions, where FTS5 wrote
a new index segment for each of them, a large share of a run's server CPU (ADR 0045); they wait in
``search_pending``. :class:`SearchIndexer` moves
them into the index many per transaction, every ``every_seconds`` in the background and at once before
a search (:meth:`SearchIndexer.catch_up`), so a search finds everything committed before it began. Any
process can do it, for any other's documents: the queue is in the database. PostgreSQL needs none of
this (its index takes each document as it is written) and runs no task.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig

from iris.app.persistence.availability import cause, database_unavailable
from iris.app.persistence.db import session_scope
from iris.app.persistence.repositories.search import INDEX_BATCH, SearchRepository

log = logging.getLogger("iris.search")


class SearchIndexer:
    """The background task and the catch-up of SQLite's search index (see the module docstring)."""

    def __init__(self, alchemy: SQLAlchemyAsyncConfig, *, every_seconds: float) -> None:
        self._alchemy = alchemy
        self._every = every_seconds
        self._task: asyncio.Task[None] | None = None

    @property
    def _sqlite(self) -> bool:
        return self._alchemy.get_engine().dialect.name == "sqlite"

    async def catch_up(self) -> int:
        """Index every pending document, a batch per transaction; how many."""
        if not self._sqlite:
            return 0
        total = 0
        while True:
            async with session_scope(self._alchemy) as db:
                moved = await SearchRepository(session=db).index_pending()
            total += moved
            if moved < INDEX_BATCH:
                return total

    def start(self) -> None:
        """Catch up every ``every_seconds`` from now on (SQLite only)."""
        if self._sqlite and self._task is None:
            self._task = asyncio.create_task(self._keep(), name="search indexer")

    async def stop(self) -> None:
        """Stop the task, then index what is still pending (a later start would anyway)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
            with contextlib.suppress(Exception):  # an outage at shutdown: the next process indexes them
                await self.catch_up()

    async def _keep(self) -> None:
        down: str | None = None  # the cause, while the database is unavailable
        while True:
            await asyncio.sleep(self._every)
            try:
                await self.catch_up()
            except Exception as exc:
                if not database_unavailable(exc):
                    log.exception("search indexer: indexing the pending documents failed")
                elif down is None:  # one line when an outage starts, one when it ends
                    down = cause(exc)
                    log.warning("search indexer: database_unavailable: %s; retrying", down)
                continue
            if down is not None:
                log.info("search indexer: the database is available again (after %s)", down)
                down = None
