"""A run starts while its intake commits; a commit that fails ends it with one RUN_ERROR, nothing stored.

The database itself refuses the commit (the ``doomed_commits`` fixture of tests/runs/conftest.py) for
runs whose id starts with ``doomed-``. Every statement of the intake succeeds; only its commit fails,
after the stream started.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.runs.conftest import Stored
from tests.runs.helpers import of_type, run, run_input, user_message

Client = AsyncTestClient[Litestar]


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
