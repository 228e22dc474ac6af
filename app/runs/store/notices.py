"""Wake-ups for followers of a run's event log in another process than the one running it.

PostgreSQL: each process holds one ``LISTEN`` connection; every commit of events notifies their run's id
(:meth:`iris.app.persistence.repositories.RunEventRepository.append_batch`), and the followers of that run
re-read the log at once. A notice can still be missed (the listening connection dropped), so a follower
also re-reads every ``safety_seconds``. Elsewhere (SQLite) there are no notices: followers re-read every
``poll_seconds``. Either way the follower reads by sequence number, so every event is handed out once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any
from uuid import UUID

import asyncpg
from sqlalchemy.engine import make_url

from iris.app.persistence.repositories import RUN_EVENTS_CHANNEL

log = logging.getLogger("iris.runs")

SAFETY_SECONDS = 1.0
"""How often a notified follower re-reads the log anyway (a notice lost with its connection)."""


class LogWakeups:
    """Polling: a follower re-reads the log every ``poll_seconds`` (databases without notices)."""

    batch_seconds = 0.25
    """How long a running run may hold events before appending them to the log: followers poll, so
    writing more often would buy them little and cost a transaction each time (SQLite has one writer)."""

    def __init__(self, poll_seconds: float) -> None:
        self.poll_seconds = poll_seconds

    def watch(self, run_pk: UUID) -> asyncio.Event:
        """An event set when the run's log may have grown (never, when polling)."""
        return asyncio.Event()

    def unwatch(self, run_pk: UUID, woken: asyncio.Event) -> None:
        """Stop setting ``woken``."""

    async def wait(self, woken: asyncio.Event, at_most: float) -> None:
        """Until ``woken`` is set or the next re-read is due (at most ``at_most`` seconds)."""
        await asyncio.sleep(min(self.poll_seconds, at_most))

    async def start(self) -> None:
        """Nothing to connect."""

    async def aclose(self) -> None:
        """Nothing to close."""


class PgNotices(LogWakeups):
    """``LISTEN`` on one dedicated asyncpg connection; see the module docstring."""

    batch_seconds = 0.04
    """Followers are woken by each commit, so the log is written often enough to keep them within
    tens of milliseconds (a fast model's burst still goes in one batch)."""

    def __init__(
        self, database_url: str, poll_seconds: float, safety_seconds: float = SAFETY_SECONDS
    ) -> None:
        super().__init__(poll_seconds)
        self.safety_seconds = safety_seconds
        url = make_url(database_url).set(drivername="postgresql")
        self._dsn = url.render_as_string(hide_password=False)
        self._connection: Any = None
        self._watchers: dict[UUID, set[asyncio.Event]] = {}

    @property
    def listening(self) -> bool:
        return self._connection is not None and not self._connection.is_closed()

    async def start(self) -> None:
        """Connect and listen; on failure followers poll (logged, never fatal)."""
        try:
            connection = await asyncpg.connect(self._dsn)
            await connection.add_listener(RUN_EVENTS_CHANNEL, self._notice)
        except (OSError, asyncpg.PostgresError) as exc:
            log.warning(
                "LISTEN %s failed (%s): followers poll the event log instead", RUN_EVENTS_CHANNEL, exc
            )
            return
        connection.add_termination_listener(self._lost)
        self._connection = connection

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(OSError, asyncpg.PostgresError):
                await connection.close(timeout=5)

    def watch(self, run_pk: UUID) -> asyncio.Event:
        woken = asyncio.Event()
        self._watchers.setdefault(run_pk, set()).add(woken)
        return woken

    def unwatch(self, run_pk: UUID, woken: asyncio.Event) -> None:
        watchers = self._watchers.get(run_pk)
        if watchers is not None:
            watchers.discard(woken)
            if not watchers:
                del self._watchers[run_pk]

    async def wait(self, woken: asyncio.Event, at_most: float) -> None:
        if not self.listening:
            await super().wait(woken, at_most)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(woken.wait(), min(self.safety_seconds, at_most))

    def _notice(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        try:
            run_pk = UUID(payload)
        except ValueError:
            return
        for woken in self._watchers.get(run_pk, ()):
            woken.set()

    def _lost(self, _connection: Any) -> None:
        log.warning(
            "database_unavailable: the LISTEN connection closed; followers poll the event log until the "
            "next start"
        )
        self._connection = None
        for watchers in self._watchers.values():  # re-read now: a notice may have been lost with it
            for woken in watchers:
                woken.set()


def log_wakeups(database_url: str, poll_seconds: float) -> LogWakeups:
    """Notices on PostgreSQL, polling elsewhere."""
    if make_url(database_url).get_backend_name() == "postgresql":
        return PgNotices(database_url, poll_seconds)
    return LogWakeups(poll_seconds)
