"""Shared moves of the run tests: upload a real image, build an AG-UI input, run and check the stream."""

from __future__ import annotations

import uuid
from typing import Any

from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.support.agui import check_stream
from tests.support.images import image_bytes

RED = (200, 30, 30)


async def upload(
    client: AsyncTestClient[Litestar],
    headers: dict[str, str],
    thread_id: str,
    *,
    data: bytes | None = None,
    name: str = "red.png",
) -> dict[str, Any]:
    """Upload an image (a 64x48 red PNG unless given) into ``thread_id``; the 201 answer."""
    response = await client.post(
        "/api/files",
        files={"file": (name, data if data is not None else image_bytes("PNG", (64, 48), RED), "image/png")},
        data={"threadId": thread_id},
        headers=headers,
    )
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    return answer


def user_message(text: str | None, *images: dict[str, Any], message_id: str | None = None) -> dict[str, Any]:
    """An AG-UI 1.0 user message with text and image parts."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text is not None else []
    content += images
    return {"id": message_id or str(uuid.uuid4()), "role": "user", "content": content}


def run_input(
    thread_id: str,
    *messages: dict[str, Any],
    run_id: str | None = None,
    model: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A ``RunAgentInput`` shaped the way ``@ag-ui/client`` 1.0 sends it."""
    return {
        "threadId": thread_id,
        "runId": run_id or str(uuid.uuid4()),
        "protocolVersion": "1.0",
        "state": {},
        "messages": list(messages),
        "tools": [],
        "context": [],
        "forwardedProps": {"modelId": model} if model else {},
        **extra,
    }


async def run(
    client: AsyncTestClient[Litestar], headers: dict[str, str], body: dict[str, Any]
) -> list[dict[str, Any]]:
    """POST the run, check the response and the whole stream with the AG-UI oracle; the events."""
    response = await client.post("/agent/runs", json=body, headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return check_stream(response.content)


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def answer_text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in of_type(events, "TEXT_MESSAGE_CONTENT"))


CHAT = "/api/agents/default/chat"


async def chat(
    client: AsyncTestClient[Litestar], headers: dict[str, str], body: dict[str, Any]
) -> list[dict[str, Any]]:
    """POST a chat-surface message, check the response and the whole stream; the events."""
    response = await client.post(CHAT, json=body, headers=headers)
    assert response.status_code == 200, response.text
    return check_stream(response.content)


async def chat_history(
    client: AsyncTestClient[Litestar], headers: dict[str, str], session: str, query: str = ""
) -> list[dict[str, Any]]:
    """A session's messages on the chat surface (its active line, unless ``query`` asks for more)."""
    response = await client.get(f"/api/agents/default/sessions/{session}/messages{query}", headers=headers)
    assert response.status_code == 200, response.text
    messages: list[dict[str, Any]] = response.json()["messages"]
    return messages
