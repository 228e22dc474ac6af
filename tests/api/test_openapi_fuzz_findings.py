"""What fuzzing the OpenAPI document found (issue 41, defect 13), one focused test each: the answer is
what the document says, on both engines where a database is involved."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from app.api.paging import POSITION_MAX
from tests.runs.helpers import chat
from tests.support.openapi import document

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]
SQLITE = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)  # no database involved
HUGE = 76994672331391604264060109979648  # the offset the fuzzer sent: no engine's integer holds it


def _parameter(path: str, method: str, name: str) -> dict[str, Any]:
    operation = document()["paths"][path][method]
    found: dict[str, Any] = next(p for p in operation["parameters"] if p["name"] == name)
    return found


async def test_a_page_past_any_integer_is_refused_not_a_500(client: Client, auth: Auth) -> None:
    """``offset``/``after`` beyond what a query can bind: 422 ``validation_failed``, never a 500."""
    alice = auth("alice")
    started = (await chat(client, alice, {"content": "hello"}))[0]
    session, run = started["threadId"], started["runId"]
    pages = [
        f"/api/agents/default/sessions?archived=true&offset={HUGE}",
        f"/api/agents/default/sessions?offset={POSITION_MAX + 1}",
        f"/api/agents/default/sessions/{session}/messages?after={HUGE}",
        f"/agent/threads/{session}/messages?after={HUGE}",
        f"/agent/runs/{run}/events?after={HUGE}",
    ]
    for url in pages:
        response = await client.get(url, headers=alice)
        assert response.status_code == 422, (url, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["code"] == "validation_failed"
    header = {**alice, "Last-Event-ID": str(HUGE)}
    response = await client.get(f"/agent/runs/{run}/events", headers=header)
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "invalid_event_id"
    last = await client.get(f"/api/agents/default/sessions?offset={POSITION_MAX}", headers=alice)
    assert last.status_code == 200, last.text
    assert last.json()["sessions"] == []


def test_every_offset_and_position_parameter_says_its_bounds() -> None:
    for path, method, name, low in (
        ("/api/agents/{slug}/sessions", "get", "offset", 0),
        ("/agent/runs/{runId}/events", "get", "after", 0),
        ("/api/agents/{slug}/sessions/{sessionId}/messages", "get", "after", -1),
        ("/agent/threads/{threadId}/messages", "get", "after", -1),
    ):
        schema = _parameter(path, method, name)["schema"]
        assert (schema["minimum"], schema["maximum"]) == (low, POSITION_MAX), (path, name)
