"""The write turn of a SQLite engine (the reasons are :mod:`iris.app.persistence.sqlite`'s, and ADR 0001): one
in-process writer at a time (:class:`WriteLock`), the one connection every write transaction may share,
the pragmas every connection runs first, and WAL checkpoints on a thread of their own."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from typing import Any

log = logging.getLogger("iris.db")

_READS = ("SELECT", "PRAGMA", "EXPLAIN")
CHECKPOINT_EVERY = 200
"""Write commits between WAL checkpoints (each commit of a run appends a few pages)."""
PRAGMAS = (
    "journal_mode=WAL",
    "foreign_keys=ON",
    "busy_timeout=0",  # waiting happens on the loop, not in SQLite (see app.persistence.sqlite)
    "synchronous=NORMAL",
    "wal_autocheckpoint=0",  # checkpoints sync the disk: a thread runs them (Checkpoints)
)
"""What every connection Iris opens on the file runs first."""


def is_write(sql: str) -> bool:
    """Whether a statement may write (anything that is not a plain read takes the write lock)."""
    return not sql.lstrip().upper().startswith(_READS)


def locked_error(timeout: float) -> sqlite3.OperationalError:
    """What a writer that got no turn within the deadline raises (503 ``database_unavailable``)."""
    return sqlite3.OperationalError(f"database is locked (no turn to write within {timeout:g} s)")


class WriteTurnHeld(RuntimeError):
    """A task asked for the write turn it already holds through another connection (a bug: it could
    only wait for itself). Not "database is locked": it is a 500, with its traceback."""


class WriteLock:
    """The one in-process writer of an engine's database, acquired with a deadline; given the database's
    file (``one_writer``), also the one connection every write transaction runs on (:meth:`writer`)."""

    def __init__(self, timeout: float, database: str | None = None) -> None:
        self.timeout = timeout
        self._lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._holder: asyncio.Task[Any] | None = None
        """The task that took the current turn (``None`` when free)."""
        self._since: float | None = None
        """When the current turn was taken (``time.monotonic()``)."""
        self._database = database
        self._writer: sqlite3.Connection | None = None
        self._functions: dict[tuple[Any, ...], tuple[tuple[Any, ...], dict[str, Any]]] = {}
        self._unregistered: list[tuple[Any, ...]] = []
        self._users = 0

    def writer(self) -> sqlite3.Connection | None:
        """The shared write connection (opened on first use), or ``None`` when each writes on its own.
        Only its write turn's holder calls this, so nothing else is using it."""
        if self._database is None:
            return None
        if self._writer is None:
            self._writer = open_connection(self._database)
            self._unregistered = list(self._functions)
        while self._unregistered:  # now, and not when registered: SQLite refuses it mid-statement
            args, kwargs = self._functions[self._unregistered.pop()]
            self._writer.create_function(*args, **kwargs)
        return self._writer

    def function(self, *args: Any, **kwargs: Any) -> None:
        """A function a pooled connection registered (by name and arity; every new connection registers
        SQLAlchemy's ``regexp`` again): the shared connection gets it at its next write turn."""
        key = args[:2]
        if key not in self._functions:
            self._functions[key] = (args, kwargs)
            self._unregistered.append(key)

    def opened(self) -> None:
        self._users += 1

    def closed(self) -> None:
        """A pooled connection closed; with the last one the shared connection closes too."""
        self._users -= 1
        if self._users <= 0 and self._writer is not None:
            self._writer.close()
            self._writer = None

    async def acquire(self, deadline: float) -> None:
        """Take the lock, or raise "database is locked" at ``deadline`` (``time.monotonic()``). A task that
        already holds the turn through another connection would wait for itself until the deadline, and
        wedge every other writer meanwhile: it gets :class:`WriteTurnHeld` at once instead."""
        self._loop = asyncio.get_running_loop()
        current = asyncio.current_task()
        if self._lock.locked() and current is not None and self._holder is current:
            raise WriteTurnHeld(
                "this task already holds the database's write turn through another session: "
                "commit or roll that one back before writing through a second"
            )
        try:
            # no helper task, unlike wait_for on 3.11
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                await self._lock.acquire()
        except TimeoutError:
            raise locked_error(self.timeout) from None
        self._holder, self._since = current, time.monotonic()

    @property
    def held_for(self) -> float:
        """How long the current turn has been held (0 when the lock is free)."""
        since = self._since
        return 0.0 if since is None or not self._lock.locked() else time.monotonic() - since

    @property
    def locked(self) -> bool:
        """Whether a write turn is held now."""
        return self._lock.locked()

    def in_transaction(self) -> bool:
        """Whether the shared write connection (if open) is inside a transaction."""
        return self._writer is not None and self._writer.in_transaction

    def release(self) -> None:
        """Release; from another thread (a connection the pool dropped there) it is handed to the loop."""
        self._holder = self._since = None
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if self._loop is None or running is self._loop or self._loop.is_closed():
            self._lock.release()
        else:
            self._loop.call_soon_threadsafe(self._lock.release)


class Checkpoints:
    """Passive WAL checkpoints on a thread, one at a time, every :data:`CHECKPOINT_EVERY` write commits."""

    def __init__(self, database: str, timeout: float) -> None:
        self._database = database
        self._timeout = timeout
        self._commits = 0
        self._running: asyncio.Future[None] | None = None

    def committed(self) -> None:
        if self._database in ("", ":memory:"):
            return
        self._commits += 1
        if self._commits < CHECKPOINT_EVERY or (self._running is not None and not self._running.done()):
            return
        self._commits = 0
        self._running = asyncio.get_running_loop().run_in_executor(None, self._checkpoint)

    def _checkpoint(self) -> None:
        try:
            connection = sqlite3.connect(self._database, timeout=self._timeout)
            try:
                connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            finally:
                connection.close()
        except sqlite3.Error as exc:  # another process holding the file, say: nothing lost, no traceback
            log.warning("WAL checkpoint failed (%s: %s); the next one retries", type(exc).__name__, exc)


def open_connection(database: str) -> sqlite3.Connection:
    """A connection to the file, as Iris uses them: usable from any thread (one caller at a time),
    SQLite's own busy wait off (``IrisConnection.run`` waits, on the loop), :data:`PRAGMAS` run."""
    connection = sqlite3.connect(database, timeout=0, check_same_thread=False)
    for pragma in PRAGMAS:
        connection.execute(f"PRAGMA {pragma}").close()
    return connection
