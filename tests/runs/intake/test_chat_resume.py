"""The chat surface answers approval interrupts itself (``resume`` in the chat body), so a chat session
is never stranded by ``interrupt_pending``."""

from __future__ import annotations

from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.support.agui import check_stream
from tests.support.run_fixtures import Stored
from tests.support.runs import answer_text, of_type, upload

Client = AsyncTestClient[Litestar]
CHAT = "/api/agents/default/chat"


async def _interrupted(client: Client, alice: dict[str, str]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """A chat session whose answer stopped to ask before deleting its image."""
    first = await client.post(CHAT, json={"content": "hello"}, headers=alice)
    session = check_stream(first.content)[0]["threadId"]
    image = await upload(client, alice, session)
    ask = f'use tool delete_attachment {{"uploadId": "{image["id"]}"}}'
    response = await client.post(
        CHAT,
        json={"sessionId": session, "parts": [{"type": "text", "text": ask}, image["parts"]["chat"]]},
        headers=alice,
    )
    events = check_stream(response.content)
    assert events[-1]["outcome"]["type"] == "interrupt"
    return session, image, events[-1]["outcome"]["interrupts"][0]


async def test_a_pending_interrupt_blocks_a_new_message_until_answered(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    session, image, interrupt = await _interrupted(client, alice)
    blocked = await client.post(CHAT, json={"sessionId": session, "content": "and now?"}, headers=alice)
    assert blocked.status_code == 422
    assert blocked.json()["code"] == "interrupt_pending"

    body = {"sessionId": session, "resume": [{"interruptId": interrupt["id"], "status": "resolved"}]}
    response = await client.post(CHAT, json=body, headers=alice)
    assert response.status_code == 200, response.text
    events = check_stream(response.content)
    output = of_type(events, "TOOL_CALL_RESULT")[0]["metadata"]["iris/toolAgentOutput"]
    assert output["status"] == "succeeded"
    assert "Tool delete_attachment returned" in answer_text(events)
    assert (await client.get(image["url"].split("8000", 1)[1])).status_code == 404
    roles = [r.role for r in await stored.messages(session)]
    assert roles == ["user", "assistant", "user", "assistant", "tool", "assistant"]

    unblocked = await client.post(CHAT, json={"sessionId": session, "content": "and now?"}, headers=alice)
    assert unblocked.status_code == 200


async def test_a_denied_interrupt_skips_the_tool_and_a_message_may_ride_along(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    session, image, interrupt = await _interrupted(client, alice)
    body = {
        "sessionId": session,
        "content": "never mind",
        "resume": [{"interruptId": interrupt["id"], "status": "cancelled"}],
    }
    response = await client.post(CHAT, json=body, headers=alice)
    assert response.status_code == 200, response.text
    events = check_stream(response.content)
    assert of_type(events, "TOOL_CALL_RESULT")[0]["metadata"]["iris/toolAgentOutput"]["status"] == "cancelled"
    assert (await client.get(image["url"].split("8000", 1)[1])).status_code == 200  # still there
    rows = await stored.messages(session)
    assert rows[-1].role == "assistant"
    assert any(r.role == "user" and r.content == "never mind" for r in rows)


@pytest.mark.parametrize(
    ("extra", "code", "field"),
    [
        ({"resume": [{"interruptId": "int_other", "status": "resolved"}]}, "interrupt_unanswered", "resume"),
        ({"resume": [{"interruptId": "x", "status": "maybe"}]}, "validation_failed", None),
        (
            {"regenerate": True, "resume": [{"interruptId": "x", "status": "resolved"}]},
            "validation_failed",
            "resume",
        ),
    ],
    ids=["wrong-interrupt", "bad-status", "with-regenerate"],
)
async def test_a_bad_resume_is_refused_and_acts_on_nothing(
    client: Client,
    alice: dict[str, str],
    stored: Stored,
    extra: dict[str, Any],
    code: str,
    field: str | None,
) -> None:
    session, image, _ = await _interrupted(client, alice)
    response = await client.post(CHAT, json={"sessionId": session, **extra}, headers=alice)
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["code"] == code
    if field is not None:
        assert problem["field"] == field
    assert (await client.get(image["url"].split("8000", 1)[1])).status_code == 200
    assert [r.role for r in await stored.messages(session)] == ["user", "assistant", "user", "assistant"]


async def test_resume_with_nothing_to_resume_and_no_message_is_refused(
    client: Client, alice: dict[str, str]
) -> None:
    first = await client.post(CHAT, json={"content": "hello"}, headers=alice)
    session = check_stream(first.content)[0]["threadId"]
    body = {"sessionId": session, "resume": [{"interruptId": "int_x", "status": "resolved"}]}
    response = await client.post(CHAT, json=body, headers=alice)
    assert response.status_code == 422
    assert response.json()["code"] == "no_new_message"
