"""A run starts while its intake commits; a commit that fails ends it with one RUN_ERROR, nothing stored.

The database itself refuses the commit: a check deferred to COMMIT (SQLite: a deferred foreign key that
a trigger breaks; PostgreSQL: a deferred constraint trigger that raises) for runs whose id starts with
``doomed-``. Every statement of the intake succeeds; only its commit fails, after the stream started.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import text

from app.persistence.db import create_engine
from tests.runs.conftest import Stored
from tests.runs.helpers import of_type, run, run_input, user_message

Client = AsyncTestClient[Litestar]

SQLITE_DOOM = (
    "CREATE TABLE doomed (run TEXT REFERENCES runs(external_id) DEFERRABLE INITIALLY DEFERRED)",
    "CREATE TRIGGER doom AFTER INSERT ON runs WHEN NEW.external_id LIKE 'doomed-%' "
    "BEGIN INSERT INTO doomed(run) VALUES ('no such run'); END",
)
POSTGRES_DOOM = (
    "CREATE FUNCTION doom() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN RAISE EXCEPTION 'doomed run %', NEW.external_id; END $$",
    "CREATE CONSTRAINT TRIGGER doom AFTER INSERT ON runs DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
    "WHEN (NEW.external_id LIKE 'doomed-%') EXECUTE FUNCTION doom()",
)


@pytest.fixture
async def doomed_commits(database_url: str, engine_name: str) -> None:
    engine = create_engine(database_url)
    try:
        async with engine.begin() as connection:
            for statement in SQLITE_DOOM if engine_name == "sqlite" else POSTGRES_DOOM:
                await connection.execute(text(statement))
    finally:
        await engine.dispose()


@pytest.mark.usefixtures("doomed_commits")
async def test_a_failed_intake_commit_is_one_run_error_and_stores_nothing(
    client: Client, auth: Callable[..., dict[str, str]], stored: Stored
) -> None:
    alice = auth("alice")
    before = await stored.counts()
    thread = str(uuid.uuid4())
    body = run_input(thread, user_message("hello there"), run_id=f"doomed-{uuid.uuid4()}")

    events = await run(client, alice, body)  # the AG-UI oracle checks the whole stream

    assert events[0]["type"] == "RUN_STARTED"  # the stream started before the commit failed
    errors = of_type(events, "RUN_ERROR")
    assert len(errors) == 1
    assert events[-1] is errors[0]
    assert errors[0]["code"] == "run_not_stored"
    assert not of_type(events, "RUN_FINISHED")
    assert await stored.counts() == before  # no session, message, run or event row
    assert await stored.run(body["runId"]) is None
    assert await stored.messages(thread) == []
