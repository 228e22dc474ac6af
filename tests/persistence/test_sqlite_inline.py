"""SQLite statements run on the event loop (app/persistence/sqlite.py): a busy database is waited for
from the loop, never inside SQLite, and WAL checkpoints happen on a thread of their own."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.persistence.db import create_engine
from app.persistence.sqlite import CHECKPOINT_EVERY


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}", sqlite_lock_timeout=1.0)
    async with engine.begin() as conn:
        await conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"))
    yield engine
    await engine.dispose()


@contextmanager
def held_by_another_connection(path: Path, seconds: float) -> Iterator[None]:
    """Another connection (as another process would) holds the write lock for ``seconds``."""
    locked = threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(path, check_same_thread=False)
        conn.execute("BEGIN EXCLUSIVE")
        locked.set()
        time.sleep(seconds)
        conn.rollback()
        conn.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert locked.wait(5)
    try:
        yield
    finally:
        thread.join()


async def _ticks_while(work: asyncio.Future[None]) -> list[float]:
    """How late a 10 ms timer fired each time while ``work`` ran (the loop's responsiveness)."""
    late: list[float] = []
    while not work.done():
        before = time.perf_counter()
        await asyncio.sleep(0.01)
        late.append(time.perf_counter() - before - 0.01)
    return late


async def _insert(engine: AsyncEngine, value: str) -> None:
    async with engine.begin() as conn:
        await conn.execute(text("INSERT INTO t (v) VALUES (:v)"), {"v": value})


async def test_a_busy_database_is_waited_for_without_blocking_the_loop(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    with held_by_another_connection(tmp_path / "db.sqlite", 0.4):
        started = time.perf_counter()
        write = asyncio.ensure_future(_insert(engine, "after the lock"))
        late = await _ticks_while(write)
        await write
    assert time.perf_counter() - started >= 0.3  # it really waited for the other connection
    assert len(late) >= 20, late  # the loop kept running meanwhile…
    assert max(late) < 0.1, late  # …never held up
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT v FROM t"))).scalars().all() == ["after the lock"]


async def test_a_database_busy_past_the_deadline_is_locked_and_the_loop_never_stalls(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    with held_by_another_connection(tmp_path / "db.sqlite", 1.6):
        write = asyncio.ensure_future(_insert(engine, "never"))
        late = await _ticks_while(write)
        with pytest.raises(Exception, match="database is locked") as caught:
            await write
    assert isinstance(caught.value.__cause__ or caught.value, sqlite3.OperationalError)
    assert max(late) < 0.1, late
    async with engine.connect() as conn:  # nothing half-written, and the engine still works
        assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar_one() == 0
    await _insert(engine, "later")


async def test_reads_go_on_while_another_connection_writes(engine: AsyncEngine, tmp_path: Path) -> None:
    await _insert(engine, "committed")
    with held_by_another_connection(tmp_path / "db.sqlite", 0.5):
        started = time.perf_counter()
        async with engine.connect() as conn:  # WAL: a reader never waits for a writer
            assert (await conn.execute(text("SELECT v FROM t"))).scalars().all() == ["committed"]
        assert time.perf_counter() - started < 0.2


async def test_write_commits_are_checkpointed_into_the_database_file(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    commits = CHECKPOINT_EVERY * 2 + 10
    for index in range(commits):
        await _insert(engine, f"row {index}")
    await asyncio.sleep(0.5)  # the checkpoint runs on a worker thread
    # The database file alone (immutable: the WAL is ignored) holds what the checkpoints copied back.
    path = tmp_path / "db.sqlite"
    with sqlite3.connect(f"file:{path}?immutable=1", uri=True) as conn:
        in_file = conn.execute("SELECT count(*) FROM t").fetchone()[0]
    assert CHECKPOINT_EVERY <= in_file <= commits
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000  # a fresh connection's own
    async with engine.connect() as conn:
        assert (await conn.execute(text("PRAGMA wal_autocheckpoint"))).scalar_one() == 0  # ours: off


async def test_a_second_writer_of_this_process_queues_on_the_loop_and_has_the_same_deadline(
    engine: AsyncEngine,
) -> None:
    async with engine.connect() as first:
        await first.execute(text("INSERT INTO t (v) VALUES ('first')"))  # holds this process's write turn
        second = asyncio.ensure_future(_insert(engine, "second"))
        late = await _ticks_while(second)
        with pytest.raises(Exception, match="no turn to write within 1 s"):
            await second
        assert max(late) < 0.1, late
        waiting = asyncio.ensure_future(_insert(engine, "third"))
        await asyncio.sleep(0.2)
        assert not waiting.done()  # queued behind the open transaction…
        await first.commit()
        await waiting  # …and in once it ends
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT v FROM t ORDER BY id"))).scalars().all() == ["first", "third"]
