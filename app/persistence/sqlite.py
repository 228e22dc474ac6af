"""SQLite connections that can never block the event loop: writers are serialised in-process, without
busy-waiting, and every cursor is closed on its connection's own thread.

Why (issue 13, defect 1): aiosqlite runs each ``sqlite3.Connection`` on a worker thread. SQLAlchemy's
adapter closes a cursor only when its statement succeeds; a failed or cancelled one was left to the
garbage collector, which may run on the event-loop thread. Finalising a cursor whose statement is still
active resets it, which takes the connection's mutex — held by the worker thread while that connection
sits in SQLite's busy handler waiting for the write lock. The lock was held by a coroutine that could
not run while the loop thread was blocked: the whole process froze until the busy timeout expired.

The two halves of the fix, each sufficient to break that cycle:

- **Cursors close on their own thread.** :class:`IrisCursor` closes itself (queued on the worker thread)
  whenever ``execute``/``fetch*`` fails or is cancelled, so the collector only ever frees closed cursors,
  which touch no SQLite state.
- **One writer per process, queued on the loop.** Before its first writing statement a connection takes
  the engine's :class:`WriteLock` (an asyncio lock: waiting for it blocks no thread), and holds it until
  ``commit``/``rollback``/``close``. In-process writers therefore never meet in SQLite's busy handler;
  only another process (or another engine) can make a connection busy-wait, for at most
  ``lock_timeout`` seconds, and waiting for the in-process lock is bounded by the same deadline. A
  deadline that passes raises ``sqlite3.OperationalError("database is locked")``, which the API answers
  with 503 ``database_unavailable``.

Reads take no lock: in WAL mode they never wait for a writer.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

import aiosqlite

T = TypeVar("T")
_READS = ("SELECT", "PRAGMA", "EXPLAIN")


def is_write(sql: str) -> bool:
    """Whether a statement may write (anything that is not a plain read takes the write lock)."""
    return not sql.lstrip().upper().startswith(_READS)


class WriteLock:
    """The one in-process writer of an engine's database, acquired with a deadline."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def acquire(self) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(self._lock.acquire(), self.timeout)
        except TimeoutError:
            raise sqlite3.OperationalError(
                f"database is locked (no turn to write within {self.timeout:g} s)"
            ) from None

    def release(self) -> None:
        """Release; from another thread (a connection finalised there) it is handed to the loop."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if self._loop is None or running is self._loop or self._loop.is_closed():
            self._lock.release()
        else:
            self._loop.call_soon_threadsafe(self._lock.release)


class IrisCursor(aiosqlite.Cursor):
    """An aiosqlite cursor that is closed on its worker thread whenever an operation fails or is cancelled."""

    _conn: IrisConnection

    async def execute(self, sql: str, parameters: Iterable[Any] | None = None) -> IrisCursor:
        await self._conn.before(sql)
        await self._guarded(super().execute(sql, parameters))
        return self

    async def executemany(self, sql: str, parameters: Iterable[Iterable[Any]]) -> IrisCursor:
        await self._conn.before(sql)
        await self._guarded(super().executemany(sql, parameters))
        return self

    async def fetchall(self) -> Iterable[sqlite3.Row]:
        return await self._guarded(super().fetchall())

    async def fetchone(self) -> sqlite3.Row | None:
        return await self._guarded(super().fetchone())

    async def fetchmany(self, size: int | None = None) -> Iterable[sqlite3.Row]:
        return await self._guarded(super().fetchmany(size))

    async def _guarded(self, operation: Awaitable[T]) -> T:
        try:
            return await operation
        except BaseException:
            # Queued behind the operation (which a cancel does not stop), on the same thread.
            self._conn.close_on_worker(self._cursor.close)
            raise


class IrisConnection(aiosqlite.Connection):
    """An aiosqlite connection that hands out :class:`IrisCursor` and takes the engine's write lock."""

    def __init__(self, connector: Callable[[], sqlite3.Connection], write_lock: WriteLock) -> None:
        super().__init__(connector, iter_chunk_size=64)
        self._write_lock = write_lock
        self._writing = False
        self._thread.daemon = True  # like SQLAlchemy's own aiosqlite connect: never hold up exit

    async def cursor(self) -> IrisCursor:  # type: ignore[override]  # aiosqlite wraps it in a context helper
        return IrisCursor(self, await self._execute(self._conn.cursor))  # type: ignore[no-untyped-call]

    async def execute(self, sql: str, parameters: Iterable[Any] | None = None) -> IrisCursor:  # type: ignore[override]
        cursor = await self.cursor()
        return await cursor.execute(sql, parameters)

    async def before(self, sql: str) -> None:
        """Take the write lock before the first statement of a transaction that may write."""
        if not self._writing and is_write(sql):
            await self._write_lock.acquire()
            self._writing = True

    def close_on_worker(self, close: Callable[[], None]) -> None:
        """Run ``close`` on the worker thread after whatever is queued there; nobody waits for it."""
        if self._running:
            self._tx.put_nowait((None, close))

    async def commit(self) -> None:
        try:
            await super().commit()
        finally:
            self._end_write()

    async def rollback(self) -> None:
        try:
            await super().rollback()
        finally:
            self._end_write()

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            self._end_write()

    def stop(self) -> asyncio.Future[Any] | None:
        self._end_write()  # a connection dropped without closing must not keep the lock
        return super().stop()

    def _end_write(self) -> None:
        if self._writing:
            self._writing = False
            self._write_lock.release()


def async_creator(database: str, *, lock_timeout: float) -> Callable[[], Awaitable[IrisConnection]]:
    """SQLAlchemy's ``async_creator`` for one SQLite file: connections sharing one :class:`WriteLock`."""
    write_lock = WriteLock(lock_timeout)

    def connector() -> sqlite3.Connection:
        return sqlite3.connect(database, timeout=lock_timeout)

    async def create() -> IrisConnection:
        connection = IrisConnection(connector, write_lock)
        await connection  # starts its worker thread and opens the file there
        return connection

    return create
