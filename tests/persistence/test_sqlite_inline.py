"""SQLite statements run on the event loop (app/persistence/sqlite.py): a busy database is waited for
from the loop, never inside SQLite, and WAL checkpoints happen on a thread of their own. Every test
runs on an engine whose connections each write on their own and on one whose write transactions share
one connection (``one_writer``, the app's)."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import NamedTuple

import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from iris.app.api.loop_monitor import LoopMonitor
from iris.app.persistence.db import create_engine
from iris.app.persistence.sqlite import OFF_LOOP_BYTES
from iris.app.persistence.sqlite_write_turn import CHECKPOINT_EVERY, WriteTurnHeld
from tests.support.waits import DISK_SECONDS, REQUEST_SECONDS, until


@pytest.fixture(params=[False, True], ids=["own-writers", "one-writer"])
def one_writer(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture
async def engine(tmp_path: Path, one_writer: bool) -> AsyncIterator[AsyncEngine]:
    """An engine whose lock waits end after 1 s."""
    async with _engine(tmp_path, 1.0, one_writer) as created:
        yield created


@pytest.fixture
async def patient_engine(tmp_path: Path, one_writer: bool) -> AsyncIterator[AsyncEngine]:
    """An engine whose lock waits a loaded machine never outlasts: only a release ends them."""
    async with _engine(tmp_path, REQUEST_SECONDS, one_writer) as created:
        yield created


@asynccontextmanager
async def _engine(tmp_path: Path, lock_timeout: float, one_writer: bool) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(
        f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}",
        sqlite_lock_timeout=lock_timeout,
        one_writer=one_writer,
    )
    async with engine.begin() as conn:
        await conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"))
    try:
        yield engine
    finally:
        await engine.dispose()


@contextmanager
def held_by_another_connection(path: Path) -> Iterator[threading.Event]:
    """Another connection (as another process would) holds the write lock until the event it yields is set."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(path, check_same_thread=False)
        conn.execute("BEGIN EXCLUSIVE")
        locked.set()
        release.wait(REQUEST_SECONDS)
        conn.rollback()
        conn.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert locked.wait(REQUEST_SECONDS)
    try:
        yield release
    finally:
        release.set()
        thread.join()


@asynccontextmanager
async def watched_loop() -> AsyncIterator[LoopMonitor]:
    """The app's own lag monitor on this loop: the longest it was blocked, less any time its thread
    waited for a CPU (a busy machine is not the loop being held up)."""
    monitor = LoopMonitor(interval=0.01)
    monitor.start()
    try:
        yield monitor
    finally:
        await monitor.stop()


async def _insert(engine: AsyncEngine, value: str) -> None:
    async with engine.begin() as conn:
        await conn.execute(text("INSERT INTO t (v) VALUES (:v)"), {"v": value})


async def test_a_busy_database_is_waited_for_without_blocking_the_loop(
    patient_engine: AsyncEngine, tmp_path: Path
) -> None:
    async with watched_loop() as monitor:
        with held_by_another_connection(tmp_path / "db.sqlite") as release:
            write = asyncio.ensure_future(_insert(patient_engine, "after the lock"))
            # The loop goes on with this test while the write waits. A write that waited inside SQLite
            # would hold the loop thread, so this test, until its own 30 s timeout: only we let go the lock.
            await asyncio.sleep(0.05)
            assert not write.done()
            release.set()  # the other connection lets go
            await write
    assert monitor.max_blocked < 0.1  # …never held up
    async with patient_engine.connect() as conn:
        assert (await conn.execute(text("SELECT v FROM t"))).scalars().all() == ["after the lock"]


async def test_a_database_busy_past_the_deadline_is_locked_and_the_loop_never_stalls(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    async with watched_loop() as monitor:
        with (
            held_by_another_connection(tmp_path / "db.sqlite"),  # held until the write has given up
            pytest.raises(Exception, match="database is locked") as caught,
        ):
            await _insert(engine, "never")
    assert isinstance(caught.value.__cause__ or caught.value, sqlite3.OperationalError)
    assert monitor.max_blocked < 0.1
    async with engine.connect() as conn:  # nothing half-written, and the engine still works
        assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar_one() == 0
    await _insert(engine, "later")


async def test_reads_go_on_while_another_connection_writes(engine: AsyncEngine, tmp_path: Path) -> None:
    await _insert(engine, "committed")
    with held_by_another_connection(tmp_path / "db.sqlite"):  # held until the read is done
        async with engine.connect() as conn:  # WAL: a reader never waits for a writer (else: locked)
            assert (await conn.execute(text("SELECT v FROM t"))).scalars().all() == ["committed"]


async def test_write_commits_are_checkpointed_into_the_database_file(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    path = tmp_path / "db.sqlite"

    def copied_all() -> WalIndex | None:
        """The WAL index once every committed frame is in the database file (read twice: a checkpoint
        that started in between changes it)."""
        index = wal_index(path)
        return index if index == wal_index(path) and index.backfilled == index.mx_frame else None

    # The table's creation was the first commit: the CHECKPOINT_EVERY-th starts a checkpoint, on a worker
    # thread (not the loop, which may wait here). No commit comes while it copies, so it copies them all.
    # A disk that other processes flood with writes holds page writes back: DISK_SECONDS says how long.
    for index in range(CHECKPOINT_EVERY - 1):
        await _insert(engine, f"row {index}")
    until(copied_all, within=DISK_SECONDS, what="a checkpoint into the file")
    assert rows_in_file(path) == CHECKPOINT_EVERY - 1

    for index in range(CHECKPOINT_EVERY - 1):
        await _insert(engine, f"more {index}")
    assert not copied_all()  # no checkpoint before the CHECKPOINT_EVERY-th commit since the last one…
    assert rows_in_file(path) == CHECKPOINT_EVERY - 1
    await _insert(engine, "the last")
    until(copied_all, within=DISK_SECONDS, what="a second checkpoint into the file")  # …and one at it
    assert rows_in_file(path) == CHECKPOINT_EVERY * 2 - 1

    with sqlite3.connect(path) as fresh:
        assert fresh.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000  # a fresh connection's own
    async with engine.connect() as conn:
        assert (await conn.execute(text("PRAGMA wal_autocheckpoint"))).scalar_one() == 0  # ours: off


class WalIndex(NamedTuple):
    """What a WAL's index (its ``-shm`` file) says of checkpoints: https://www.sqlite.org/walformat.html,
    2.2; native byte order. Read as bytes, never through SQLite, which would share the writers' locks.

    The database file alone is the database only when every frame is copied: a checkpoint that copies up
    to a frame (a reader still needing it) leaves a page as it was when that page has a later frame too
    (SQLite's readers read it from the WAL), so the file alone is no snapshot to count rows in."""

    mx_frame: int
    """The WAL's last committed frame (``mxFrame``, byte 16)."""
    backfilled: int
    """Frames checkpoints copied into the database file (``nBackfill``, byte 96)."""


def wal_index(path: Path) -> WalIndex:
    shm = Path(f"{path}-shm").read_bytes()
    return WalIndex(*(int.from_bytes(shm[at : at + 4], sys.byteorder) for at in (16, 96)))


def rows_in_file(path: Path) -> int:
    """Rows of ``t`` in the database file alone (the WAL ignored). Its bytes are opened in memory, never
    through SQLite's file layer: a second connection to the file in the writers' own process would share
    SQLite's per-file lock and wal-index state with them."""
    image = bytearray(path.read_bytes())
    image[18:20] = b"\x01\x01"  # WAL mode off in the copy: an in-memory database has no WAL
    with sqlite3.connect(":memory:") as conn:
        conn.deserialize(bytes(image))
        count: int = conn.execute("SELECT count(*) FROM t").fetchone()[0]
    return count


async def test_a_second_writer_of_this_process_queues_on_the_loop_and_has_the_same_deadline(
    engine: AsyncEngine,
) -> None:
    async with engine.connect() as first:
        await first.execute(text("INSERT INTO t (v) VALUES ('first')"))  # holds this process's write turn
        async with watched_loop() as monitor:
            with pytest.raises(Exception, match="no turn to write within 1 s"):
                await asyncio.ensure_future(_insert(engine, "second"))  # another task: it waits
        assert monitor.max_blocked < 0.1
        waiting = asyncio.ensure_future(_insert(engine, "third"))
        await asyncio.sleep(0.2)
        assert not waiting.done()  # queued behind the open transaction…
        await first.commit()
        await waiting  # …and in once it ends
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT v FROM t ORDER BY id"))).scalars().all() == ["first", "third"]


async def test_a_second_session_of_the_task_holding_the_write_turn_is_refused_at_once(
    engine: AsyncEngine,
) -> None:
    """Issue 41: a task that writes through a second session while its first holds the write turn could
    only wait for itself, every other writer of the process queued behind it. It is told at once, and
    the turn it holds is untouched (its transaction commits)."""
    async with engine.connect() as first:
        await first.execute(text("INSERT INTO t (v) VALUES ('first')"))
        async with watched_loop() as monitor:
            with pytest.raises(WriteTurnHeld, match="already holds the database's write turn"):
                await _insert(engine, "second")
        assert monitor.max_blocked < 0.1
        await first.commit()
    await _insert(engine, "third")  # the turn was released with the commit
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT v FROM t ORDER BY id"))).scalars().all() == ["first", "third"]


async def test_a_large_write_and_its_transaction_end_run_off_the_loop_one_writer_at_a_time(
    patient_engine: AsyncEngine,
) -> None:
    """A statement carrying OFF_LOOP_BYTES or more (a long answer) runs on a worker thread, and so does
    the rest of its transaction; the write lock is held meanwhile (a second writer of this process waits
    for the commit), and the next transaction on the same connection is inline again."""
    engine = patient_engine
    where: list[tuple[str, str]] = []

    def seen(value: str) -> str:
        where.append((value[:5], threading.current_thread().name))
        return value

    loop_thread = threading.current_thread().name
    async with engine.connect() as conn:
        raw = await conn.get_raw_connection()
        assert raw.dbapi_connection is not None
        await conn.run_sync(lambda _sync: raw.dbapi_connection.create_function("seen", 1, seen))  # type: ignore[union-attr]
        async with conn.begin():
            await conn.execute(text("INSERT INTO t (v) VALUES (seen(:v))"), {"v": "large" * OFF_LOOP_BYTES})
            await conn.execute(text("INSERT INTO t (v) VALUES (seen(:v))"), {"v": "small"})
            second = asyncio.ensure_future(_insert(engine, "second writer"))
            await asyncio.sleep(0.05)
            assert not second.done()  # one writer: it waits for this transaction's commit
        await second
        async with conn.begin():
            await conn.execute(text("INSERT INTO t (v) VALUES (seen(:v))"), {"v": "after"})
    assert [value for value, _ in where] == ["large", "small", "after"]
    assert where[0][1] != loop_thread
    assert where[1][1] != loop_thread
    assert where[2][1] == loop_thread
    async with engine.connect() as conn:
        stored = (await conn.execute(text("SELECT substr(v, 1, 5), length(v) FROM t ORDER BY id"))).all()
    assert [tuple(row) for row in stored] == [
        ("large", 5 * OFF_LOOP_BYTES),
        ("small", 5),
        ("secon", 13),
        ("after", 5),
    ]


async def test_sixteen_writers_at_once_reuse_their_connections_burst_after_burst(engine: AsyncEngine) -> None:
    """Writers queued on the write lock each hold a connection: the pool keeps all of them, so a second
    burst opens none (a connection is a file open, five pragmas and the schema parsed again)."""
    opened: list[object] = []
    event.listen(engine.sync_engine, "connect", lambda dbapi, _record: opened.append(dbapi))

    async def write(value: int) -> None:
        async with engine.begin() as conn:
            await conn.execute(text("INSERT INTO t (v) VALUES (:v)"), {"v": str(value)})
            await asyncio.sleep(0.01)  # the others queue behind this transaction meanwhile

    for burst in range(3):
        await asyncio.gather(*(write(burst * 16 + i) for i in range(16)))
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar() == 48
    assert 1 <= len(opened) <= 16


async def test_a_write_transaction_reads_its_own_writes_and_others_only_what_it_committed(
    engine: AsyncEngine,
) -> None:
    async with engine.connect() as writer, engine.connect() as reader:
        await writer.execute(text("INSERT INTO t (v) VALUES ('mine')"))
        mine = (await writer.execute(text("SELECT v FROM t"))).scalars().all()
        theirs = (await reader.execute(text("SELECT v FROM t"))).scalars().all()
        await writer.commit()
        after = (await reader.execute(text("SELECT v FROM t"))).scalars().all()
    assert (mine, theirs, after) == (["mine"], [], ["mine"])


async def test_what_a_writer_did_not_commit_never_reaches_the_next_one(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        await conn.execute(text("INSERT INTO t (v) VALUES ('rolled back')"))
        await conn.rollback()
    async with engine.connect() as other, engine.connect() as conn:
        await other.execute(text("SELECT 1"))  # another pooled connection stays open meanwhile
        await conn.execute(text("INSERT INTO t (v) VALUES ('dropped with its connection')"))
        iris = (await conn.get_raw_connection()).driver_connection
        assert iris is not None
        iris.stop()  # closed mid-transaction: SQLAlchemy's forced terminate
        await conn.invalidate()
    await _insert(engine, "committed")
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT v FROM t"))).scalars().all() == ["committed"]


def _open_files(path: Path) -> int:
    """How many of this process's file descriptors are open on ``path``."""
    return sum(1 for fd in Path("/proc/self/fd").iterdir() if fd.resolve() == path.resolve())


async def test_the_shared_write_connection_closes_with_the_engine(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    async with _engine(tmp_path, 1.0, one_writer=True) as engine:
        await asyncio.gather(*(_insert(engine, str(i)) for i in range(4)))
        assert _open_files(path) >= 2  # a pooled connection and the shared writer at least
    assert _open_files(path) == 0


async def test_a_commit_that_fails_leaves_nothing_for_the_next_writer(engine: AsyncEngine) -> None:
    """A deferred foreign key fails the COMMIT itself, which leaves SQLite's transaction open: it must
    be undone on the connection it is on (the shared one, with ``one_writer``), not carried into the
    next writer's transaction."""
    async with engine.begin() as conn:
        await conn.execute(text("CREATE TABLE parent (id INTEGER PRIMARY KEY)"))
        await conn.execute(
            text("CREATE TABLE child (p INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)")
        )

    async def doomed() -> None:
        async with engine.begin() as conn:
            await conn.execute(text("INSERT INTO t (v) VALUES ('doomed')"))
            await conn.execute(text("INSERT INTO child (p) VALUES (999)"))  # no such parent: fails at COMMIT

    with pytest.raises(Exception, match="FOREIGN KEY constraint failed"):
        await doomed()
    await _insert(engine, "next")
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT v FROM t"))).scalars().all() == ["next"]
        assert (await conn.execute(text("SELECT count(*) FROM child"))).scalar_one() == 0


async def test_a_connection_opened_while_a_large_write_runs_does_not_fail(
    patient_engine: AsyncEngine,
) -> None:
    """Each new pooled connection registers SQLAlchemy's ``regexp`` function, which the shared write
    connection takes too: not while a large statement runs on it off the loop, but at the next write
    turn. Registered at once, it waited for the connection's mutex holding the GIL, which the
    statement's Python function needed: the process hung (or, between two statements, SQLite refused
    to redefine the function and the new connection's request failed)."""
    engine = patient_engine
    started = threading.Event()

    def slow(value: str) -> str:
        started.set()
        time.sleep(0.3)
        return value

    async with engine.connect() as writing:
        iris = (await writing.get_raw_connection()).driver_connection
        assert iris is not None
        await iris.create_function("slow", 1, slow)
        large = asyncio.ensure_future(
            writing.execute(text("INSERT INTO t (v) VALUES (slow(:v))"), {"v": "x" * OFF_LOOP_BYTES})
        )
        await asyncio.to_thread(started.wait, REQUEST_SECONDS)  # on its worker thread now
        failed: Exception | None = None
        try:
            async with engine.connect() as fresh:  # a new pooled connection, opened meanwhile
                assert (await fresh.execute(text("SELECT count(*) FROM t"))).scalar_one() == 0
        except Exception as exc:  # reported below, once the large write is over
            failed = exc
        await large
        await writing.commit()
    assert failed is None, failed
    async with engine.begin() as conn:
        await conn.execute(text("INSERT INTO t (v) VALUES ('c')"))
        found = await conn.execute(text("SELECT v FROM t WHERE v REGEXP '^c$'"))
        assert found.scalars().all() == ["c"]
