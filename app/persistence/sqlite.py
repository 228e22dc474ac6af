"""SQLite connections for the async engine, run on the event-loop thread and never waiting there.

The interface SQLAlchemy's async SQLite dialect drives (aiosqlite's) runs each statement inline, from
cursor to close, in one call: a hand-off to a worker thread costs more than the statement (ADR 0053).
What the worker thread protected against is kept without it:

- **Waiting never blocks.** SQLite's busy handler is off (``busy_timeout = 0``); a busy statement is
  retried from the loop with ``asyncio.sleep`` until ``lock_timeout``, then raises "database is
  locked" (503 ``database_unavailable``). Waiting for this process's lock and for the file is one wait.
- **One writer per process, queued on the loop.** Before its first writing statement a connection takes
  the engine's :class:`WriteLock` and holds it to ``commit``/``rollback``/``close``.
- **…on one connection.** With ``one_writer`` (the app's engine) every write transaction, from its first
  write to its end, runs on one connection the lock owns, so its page cache stays warm (ADR 0056). It
  gets the pool's :data:`PRAGMAS` and functions at its next write turn, what a writer leaves uncommitted
  is rolled back on it, and it closes with the last pooled connection.
- **A turn is a short critical section** (ADR 0001): ended on every exit, never waited for by the task
  holding it (a second connection of that task gets :class:`WriteTurnHeld` at once).
- **No large write on the loop.** A statement carrying :data:`OFF_LOOP_BYTES` or more, and the rest of
  its transaction, runs on a worker thread while the loop waits (ADR 0054); still one caller at a time.
- **No fsync on the loop.** WAL with ``synchronous=NORMAL``; automatic checkpoints are off, and
  :class:`Checkpoints` runs a passive one on a thread every :data:`CHECKPOINT_EVERY` write commits.

Every ``sqlite3`` cursor is closed by the call that opened it, so none is finalised on the loop while
a thread waits for the file. Reads take no lock: in WAL mode they never wait for a writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import Any, TypeVar

from iris.app.persistence.sqlite_write_turn import (
    Checkpoints,
    WriteLock,
    is_write,
    locked_error,
)

T = TypeVar("T")

_BUSY = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
RETRY_FIRST_SECONDS = 0.001
RETRY_MAX_SECONDS = 0.05
OFF_LOOP_BYTES = 256 * 1024
"""Parameters (text and blobs, summed over a statement's rows) from which a statement and its
transaction's end run on a thread instead of inline (see the module docstring)."""


def _busy(exc: sqlite3.OperationalError) -> bool:
    # Only plain BUSY/LOCKED clear up by waiting: BUSY_SNAPSHOT (a stale read snapshot) never does.
    return getattr(exc, "sqlite_errorcode", sqlite3.SQLITE_BUSY) in _BUSY


class IrisCursor:
    """What SQLAlchemy's adapter expects of an aiosqlite cursor. Each statement runs in one call that
    opens a ``sqlite3`` cursor, executes, reads every row and closes it; the rows are kept here."""

    arraysize = 1

    def __init__(self, connection: IrisConnection) -> None:
        self._conn = connection
        self.description: Any = None
        self.rowcount = -1
        self.lastrowid: int | None = None
        self._rows: list[Any] = []

    async def execute(self, sql: str, parameters: Iterable[Any] | None = None) -> IrisCursor:
        await self._conn.before(sql)
        large = parameters is not None and _is_large([parameters])
        self._take(await self._conn.run(_statement, sql, parameters, many=False, off_loop=large))
        return self

    async def executemany(self, sql: str, parameters: Iterable[Iterable[Any]]) -> IrisCursor:
        await self._conn.before(sql)
        rows = list(parameters)
        large = _is_large(rows)
        self._take(await self._conn.run(_statement, sql, rows, many=True, off_loop=large))
        return self

    async def fetchall(self) -> list[Any]:
        rows, self._rows = self._rows, []
        return rows

    async def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        count = self.arraysize if size is None else size
        rows, self._rows = self._rows[:count], self._rows[count:]
        return rows

    async def close(self) -> None:
        self._rows = []

    def _take(self, result: tuple[Any, list[Any], int | None, int]) -> None:
        self.description, self._rows, self.lastrowid, self.rowcount = result


_TEXT_OR_BYTES = (str, bytes, bytearray, memoryview)
"""A tuple made once: ``str | bytes | …`` in the call below would build three unions per value."""


def _is_large(rows: Iterable[Any]) -> bool:
    """Whether these parameter rows carry :data:`OFF_LOOP_BYTES` of text or blobs or more."""
    total = 0
    for row in rows:
        for value in row.values() if isinstance(row, dict) else row:
            if isinstance(value, _TEXT_OR_BYTES):
                total += len(value)
                if total >= OFF_LOOP_BYTES:
                    return True
    return False


def _statement(
    connection: sqlite3.Connection, sql: str, parameters: Any, *, many: bool
) -> tuple[Any, list[Any], int | None, int]:
    """One statement from cursor to close."""
    cursor = connection.cursor()
    try:
        if many:
            cursor.executemany(sql, parameters)
        elif parameters is None:
            cursor.execute(sql)
        else:
            cursor.execute(sql, parameters)
        rows = cursor.fetchall() if cursor.description else []
        return cursor.description, rows, cursor.lastrowid, cursor.rowcount
    finally:
        cursor.close()


async def _on_thread(call: Callable[[], T]) -> T:
    """``call()`` on a worker thread. A cancelled caller still waits for it to finish: the connection
    must not be used (rolled back, closed) while the thread is still using it."""
    future = asyncio.get_running_loop().run_in_executor(None, call)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await asyncio.wait([future])
        raise


class _Inline:
    """aiosqlite's request queue, as SQLAlchemy's adapter uses it directly (to set the isolation
    level): the call runs now and settles the future."""

    def put_nowait(self, item: tuple[asyncio.Future[Any] | None, Callable[[], Any]]) -> None:
        future, function = item
        try:
            result = function()
        except Exception as exc:
            if future is not None:
                future.set_exception(exc)
        else:
            if future is not None:
                future.set_result(result)


class IrisConnection:
    """The aiosqlite connection interface SQLAlchemy's aiosqlite dialect drives, run inline (see the
    module docstring): busy statements retried from the loop, the engine's write lock taken before the
    first write of a transaction."""

    def __init__(
        self,
        connection: sqlite3.Connection,
        write_lock: WriteLock,
        checkpoints: Checkpoints,
        write_wait: Callable[[float], None] | None = None,
    ) -> None:
        self._connection: sqlite3.Connection | None = connection
        self._write_lock = write_lock
        self._checkpoints = checkpoints
        self._writing = False
        self._turn_deadline: float | None = None
        """While a transaction waits for its write turn: when that wait gives up (one deadline for the
        in-process lock and the busy file together)."""
        self._tx = _Inline()
        self._write_wait = write_wait
        self._wait_started: float | None = None
        """When the write turn's wait began, until its first write statement has run (then reported)."""
        self._large = False
        """A statement of this transaction ran off the loop: its commit or rollback does too."""

    @property
    def _own(self) -> sqlite3.Connection:
        """This connection's own SQLite connection (raises once it is closed)."""
        if self._connection is None:
            raise ValueError("no active connection")
        return self._connection

    @property
    def _conn(self) -> sqlite3.Connection:
        """The connection statements run on: this one's, or from a transaction's first write to its end
        the engine's shared write connection, if it has one."""
        own = self._own
        if self._writing and (writer := self._write_lock.writer()) is not None:
            return writer
        return own

    @property
    def isolation_level(self) -> str | None:
        return self._own.isolation_level

    async def cursor(self) -> IrisCursor:
        return IrisCursor(self)

    async def execute(self, sql: str, parameters: Iterable[Any] | None = None) -> IrisCursor:
        return await IrisCursor(self).execute(sql, parameters)

    async def create_function(self, *args: Any, **kwargs: Any) -> None:
        self._own.create_function(*args, **kwargs)
        self._write_lock.function(*args, **kwargs)

    async def run(self, function: Callable[..., T], *args: Any, off_loop: bool = False, **kwargs: Any) -> T:
        """``function(sqlite3_connection, *args, **kwargs)``, retried while the database is busy: until
        the write turn's deadline while waiting for one, else for ``lock_timeout`` from now. Inline,
        unless ``off_loop`` (a large statement) or the transaction had one: then on a worker thread."""
        timeout = self._write_lock.timeout
        deadline = self._turn_deadline or time.monotonic() + timeout
        delay = RETRY_FIRST_SECONDS
        threaded = off_loop or self._large
        self._large = threaded
        while True:
            try:
                if threaded:
                    result = await _on_thread(partial(function, self._conn, *args, **kwargs))
                else:
                    result = function(self._conn, *args, **kwargs)
            except sqlite3.OperationalError as exc:
                if not _busy(exc):
                    raise
                if time.monotonic() + delay > deadline:
                    self._report_wait()
                    raise locked_error(timeout) from exc
            else:
                self._turn_deadline = None  # the first write went through: the turn is this one's
                self._report_wait()
                return result
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_SECONDS)

    def _report_wait(self) -> None:
        """Once a write turn's first write statement ran (or gave up): how long the turn waited."""
        if self._wait_started is not None:
            waited, self._wait_started = time.perf_counter() - self._wait_started, None
            if self._write_wait is not None:
                self._write_wait(waited)

    async def before(self, sql: str) -> None:
        """Take the write lock before the first statement of a transaction that may write; the wait for
        it and for the file start one deadline (see the module docstring)."""
        if not self._writing and is_write(sql):
            self._turn_deadline = time.monotonic() + self._write_lock.timeout
            self._wait_started = time.perf_counter()
            try:
                await self._write_lock.acquire(self._turn_deadline)
            except BaseException as exc:
                self._turn_deadline = None
                if isinstance(exc, sqlite3.OperationalError):
                    self._report_wait()
                self._wait_started = None
                raise
            self._writing = True

    async def commit(self) -> None:
        wrote = self._writing
        try:
            await self.run(sqlite3.Connection.commit)
        except BaseException:
            # A COMMIT that fails (a deferred foreign key, say) leaves the transaction open: undo it now,
            # on the connection it is on, which the caller's rollback after this would no longer reach
            # once the write turn is over (the shared write connection, the next writer's).
            with contextlib.suppress(sqlite3.Error):
                await self.run(sqlite3.Connection.rollback)
            raise
        finally:
            self._end_write()
        if wrote:
            self._checkpoints.committed()

    async def rollback(self) -> None:
        try:
            await self.run(sqlite3.Connection.rollback)
        finally:
            self._end_write()

    async def close(self) -> None:
        self.stop()

    def stop(self) -> None:
        """Close now (also SQLAlchemy's forced terminate); a connection never keeps the write lock, and
        what it wrote on the shared connection and did not commit is rolled back."""
        try:
            if self._writing and (writer := self._write_lock.writer()) is not None:
                writer.rollback()
        finally:
            try:
                if self._connection is not None:
                    self._connection.close()
                    self._connection = None
                    self._write_lock.closed()
            finally:
                self._end_write()

    @property
    def writing(self) -> bool:
        """Whether this connection holds the engine's write turn (from its first write to its end)."""
        return self._writing

    def _end_write(self) -> None:
        self._turn_deadline = None
        self._large = False
        if self._writing:
            self._writing = False
            try:
                # The shared connection never outlives a turn inside a transaction, whatever ended it.
                if self._write_lock.in_transaction() and (writer := self._write_lock.writer()) is not None:
                    writer.rollback()
            finally:
                self._write_lock.release()


def async_creator(
    database: str,
    *,
    lock_timeout: float,
    write_wait: Callable[[float], None] | None = None,
    one_writer: bool = False,
) -> Callable[[], Awaitable[IrisConnection]]:
    """SQLAlchemy's ``async_creator`` for one SQLite file: connections sharing one :class:`WriteLock`
    and one :class:`Checkpoints`; ``write_wait`` hears how long each write turn waited; with
    ``one_writer`` (not for an in-memory database, which is another one on each connection) every write
    transaction runs on one shared connection (see the module docstring)."""
    shared = one_writer and database not in ("", ":memory:")
    write_lock = WriteLock(lock_timeout, database if shared else None)
    checkpoints = Checkpoints(database, lock_timeout)

    async def create() -> IrisConnection:
        # The engine's "connect" listener runs PRAGMAS on it too (app.persistence.db).
        connection = sqlite3.connect(database, timeout=0, check_same_thread=False)
        write_lock.opened()
        return IrisConnection(connection, write_lock, checkpoints, write_wait)

    create.write_lock = write_lock  # type: ignore[attr-defined]  # db.write_lock finds it here
    return create
