"""``_driver_sql.execute``: the writers' statements on a real database. On SQLite they go straight to
Iris's connection, so what must hold is what SQLAlchemy's path gave: the transaction's commit and
rollback are SQLAlchemy's, driver errors come out wrapped the same way, and a statement listener (a
sampled trace, a bench's counter) still hears every statement."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncEngine

from iris.app.persistence.db import create_engine
from iris.app.persistence.repositories._driver_sql import execute

INSERT = "INSERT INTO driver_probe (id, n) VALUES (?, ?)"


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url)
    async with engine.begin() as connection:
        await connection.exec_driver_sql("CREATE TABLE driver_probe (id VARCHAR(40) PRIMARY KEY, n INTEGER)")
    try:
        yield engine
    finally:
        await engine.dispose()


def _sql(engine: AsyncEngine, text: str) -> str:
    """``?`` marks as the engine's driver wants them (asyncpg numbers them)."""
    if engine.dialect.name != "postgresql":
        return text
    parts = text.split("?")
    return "".join(part + (f"${i + 1}" if i < len(parts) - 1 else "") for i, part in enumerate(parts))


async def _ids(engine: AsyncEngine) -> list[str]:
    async with engine.connect() as connection:
        rows = (await connection.exec_driver_sql("SELECT id FROM driver_probe ORDER BY n")).fetchall()
    return [row[0] for row in rows]


async def test_statements_commit_and_roll_back_with_sqlalchemys_transaction(engine: AsyncEngine) -> None:
    insert = _sql(engine, INSERT)
    async with engine.begin() as connection:
        one = await execute(connection, insert, ("a", 1))
        await execute(connection, insert, [("b", 2), ("c", 3)])  # its rowcount: asyncpg says -1
        counted = await execute(connection, "SELECT count(*) FROM driver_probe", ())
    assert (one.rowcount, counted.scalar()) == (1, 3)

    async def fails_after_writing() -> None:
        async with engine.begin() as connection:
            await execute(connection, insert, ("d", 4))
            raise RuntimeError("the caller failed: the transaction rolls back")

    with pytest.raises(RuntimeError):
        await fails_after_writing()
    updated = _sql(engine, "UPDATE driver_probe SET n = n + 10 WHERE id = ?")
    async with engine.begin() as connection:
        assert (await execute(connection, updated, ("zzz",))).rowcount == 0

    assert await _ids(engine) == ["a", "b", "c"]


async def test_driver_errors_come_out_as_sqlalchemys(engine: AsyncEngine) -> None:
    insert = _sql(engine, INSERT)
    async with engine.begin() as connection:
        await execute(connection, insert, ("a", 1))

    with pytest.raises(sa_exc.IntegrityError) as raised:
        async with engine.begin() as connection:
            await execute(connection, insert, [("b", 2), ("a", 3)])  # the second row's key is taken
    assert raised.value.orig is not None
    with pytest.raises(sa_exc.DBAPIError):
        async with engine.begin() as connection:
            await execute(connection, "SELECT nope FROM driver_probe", ())

    assert await _ids(engine) == ["a"]  # the failed executemany left nothing


async def test_a_statement_listener_hears_every_statement(engine: AsyncEngine) -> None:
    heard: list[str] = []

    def listener(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        heard.append(statement)

    insert = _sql(engine, INSERT)
    async with engine.begin() as connection:
        event.listen(connection.sync_connection, "before_cursor_execute", listener)
        await execute(connection, insert, (str(uuid.uuid4()), 1))
        await execute(connection, insert, [(str(uuid.uuid4()), 2)])
        event.remove(connection.sync_connection, "before_cursor_execute", listener)
        await execute(connection, insert, (str(uuid.uuid4()), 3))  # nobody listening any more

    assert heard == [insert, insert]
    assert len(await _ids(engine)) == 3
