"""``MESSAGES_SNAPSHOT`` on request (``?snapshot=messages``): a thread's history as one event, valid for
ag-ui-protocol's strict oracle and ``@ag-ui/core``'s zod schemas, holding what the ``?format=ag-ui`` history
holds; on a re-attach from the start, right after ``RUN_STARTED`` and unnumbered, holding the thread up to
the run's input; never unasked, never on a resumed stream (``Last-Event-ID``). The capabilities say so."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.support.agui import check_stream, parse_sse, validate_event
from tests.support.npm import npm_install
from tests.support.run_fixtures import Stored
from tests.support.runs import run, run_input, upload, user_message
from tests.support.waits import REQUEST_SECONDS

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
Client = AsyncTestClient[Litestar]
SCHEMAS = Path(__file__).parents[2] / "agui" / "agui_schemas.mjs"


async def a_thread(client: Client, alice: dict[str, str], stored: Stored) -> tuple[str, dict[str, Any]]:
    """A thread with an image, then a tool call and its result; the second run's input."""
    await stored.set_agent_tools(["current_time"])
    thread = str(uuid.uuid4())
    image = await upload(client, alice, thread)
    await run(client, alice, run_input(thread, user_message("what is this?", image["parts"]["agui"])))
    second = run_input(thread, user_message("use tool current_time {}"))
    await run(client, alice, second)
    return thread, second


def zod_refusals(tmp_path_factory: pytest.TempPathFactory, events: list[dict[str, Any]]) -> list[Any]:
    where = npm_install(tmp_path_factory, "ag-ui-core-snapshot", "@ag-ui/client")
    shutil.copy(SCHEMAS, where / SCHEMAS.name)
    done = subprocess.run(
        ["node", SCHEMAS.name],
        cwd=where,
        input="".join(json.dumps(e) + "\n" for e in events),
        capture_output=True,
        text=True,
        timeout=REQUEST_SECONDS,
        check=True,
    )
    return [r for r in map(json.loads, done.stdout.splitlines()) if not r["ok"]]


async def test_a_threads_history_as_one_snapshot(
    client: Client, alice: dict[str, str], stored: Stored, tmp_path_factory: pytest.TempPathFactory
) -> None:
    thread, _ = await a_thread(client, alice, stored)
    url = f"/agent/threads/{thread}/messages"
    snapshot = (await client.get(url, params={"snapshot": "messages"}, headers=alice)).json()
    page = (await client.get(url, params={"format": "ag-ui"}, headers=alice)).json()

    validate_event(snapshot)
    assert zod_refusals(tmp_path_factory, [snapshot]) == []
    assert snapshot["type"] == "MESSAGES_SNAPSHOT"
    assert [m["id"] for m in snapshot["messages"]] == [m["id"] for m in page["messages"]]
    assert [m["role"] for m in snapshot["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    image = snapshot["messages"][0]["content"][1]
    assert (image["type"], image["source"]["type"]) == ("image", "url")

    refused = await client.get(url, params={"snapshot": "messages", "after": 0}, headers=alice)
    assert (refused.status_code, refused.json()["code"]) == (422, "snapshot_not_paged")


async def test_re_attach_from_the_start_gets_the_thread_up_to_the_runs_input(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    _, second = await a_thread(client, alice, stored)
    url = f"/agent/runs/{second['runId']}/events"

    asked = await client.get(url, params={"snapshot": "messages"}, headers=alice)
    frames = parse_sse(asked.content)
    events = check_stream(asked.content)
    assert [e["type"] for e in events[:2]] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    assert frames[1].id is None
    assert [m["role"] for m in events[1]["messages"]] == ["user", "assistant", "user"]
    assert events[1]["messages"][-1]["id"] == second["messages"][0]["id"]

    plain = check_stream((await client.get(url, headers=alice)).content)
    assert "MESSAGES_SNAPSHOT" not in [e["type"] for e in plain]  # unasked: the stream as before
    assert plain == events[:1] + events[2:]
    resumed = await client.get(url, params={"snapshot": "messages"}, headers={**alice, "Last-Event-ID": "1"})
    assert "MESSAGES_SNAPSHOT" not in [f.data["type"] for f in parse_sse(resumed.content)]


async def test_the_capabilities_say_which_newer_events_iris_sends(client: Client) -> None:
    custom = (await client.get("/agent/capabilities")).json()["custom"]
    assert custom["iris/events"] == {
        "activityTypes": ["iris/toolProgress"],
        "messagesSnapshot": [
            "GET /agent/runs/{runId}/events?snapshot=messages",
            "GET /agent/threads/{threadId}/messages?snapshot=messages",
        ],
    }
