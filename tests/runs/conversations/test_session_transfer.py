"""Export and import: JSON is the whole tree with freshly signed image URLs and comes back in as a new
session identical to the old one; Markdown is the active line to read; an import that does not
validate is refused whole and stores nothing. Both engines."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.support.images import image_bytes
from tests.support.run_fixtures import Stored
from tests.support.runs import chat, chat_history, upload

Client = AsyncTestClient[Litestar]
SESSIONS = "/api/agents/default/sessions"


async def exported(client: Client, headers: dict[str, str], session: str, kind: str = "json") -> Any:
    response = await client.get(f"{SESSIONS}/{session}/export", params={"format": kind}, headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-disposition"].startswith("attachment; filename=")
    return response.json() if kind == "json" else response


def comparable(export: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages without what an import must change: image URLs, their expiry and upload ids."""
    messages: list[dict[str, Any]] = copy.deepcopy(export["messages"])
    for message in messages:
        for part in message.get("parts", []):
            for key in ("image", "expiresAt", "uploadId"):
                part.pop(key, None)
    return messages


async def rich_session(client: Client, alice: dict[str, str]) -> str:
    """Text and an image, a tool call, an edit, and a regeneration that thinks first."""
    session = str(uuid.uuid4())
    image = await upload(client, alice, session, data=image_bytes("PNG", (21, 13)), name="wallaby.png")
    text = {"type": "text", "text": "what is this?"}
    await chat(client, alice, {"sessionId": session, "parts": [text, image["parts"]["chat"]]})
    await chat(client, alice, {"sessionId": session, "content": 'use tool current_time {"timezone": "UTC"}'})
    await chat(client, alice, {"sessionId": session, "content": "say more"})
    last_user = (await chat_history(client, alice, session))[-2]
    await chat(client, alice, {"sessionId": session, "editMessageId": last_user["id"], "content": "say less"})
    await chat(client, alice, {"sessionId": session, "regenerate": True, "enableThinking": True})
    return session


async def test_json_export_is_the_whole_tree_with_fresh_image_urls(
    client: Client, alice: dict[str, str]
) -> None:
    session = await rich_session(client, alice)
    export = await exported(client, alice, session)
    everything = await chat_history(client, alice, session, "?includeSuperseded=true")
    line = await chat_history(client, alice, session)

    assert (export["format"], export["version"]) == ("iris.session", 1)
    assert export["session"]["id"] == session
    assert export["session"]["agentSlug"] == "default"
    assert [m["id"] for m in export["messages"]] == [m["id"] for m in everything]
    assert export["activeMessageId"] == line[-1]["id"]
    by_id = {m["id"]: m for m in export["messages"]}
    walked, current = [], by_id[export["activeMessageId"]]
    while current is not None:
        walked.append(current["id"])
        current = by_id.get(current.get("parentId", ""))
    assert walked[::-1] == [m["id"] for m in line]
    assert sum("supersededAt" in m for m in export["messages"]) == len(everything) - len(line)

    (image,) = [p for m in export["messages"] for p in m.get("parts", []) if p["type"] == "image"]
    assert (image["name"], image["width"], image["height"]) == ("wallaby.png", 21, 13)
    url = urlsplit(image["image"])
    fetched = await client.get(f"{url.path}?{url.query}")
    assert fetched.status_code == 200
    assert fetched.content == image_bytes("PNG", (21, 13))
    tool = next(m for m in export["messages"] if m["role"] == "tool")
    assert tool["toolAgentOutput"]["toolName"] == "current_time"
    caller = by_id[tool["parentId"]]
    assert caller["toolCalls"][0]["id"] == tool["toolAgentOutput"]["toolCallId"]
    assert any(p["type"] == "reasoning" for p in by_id[export["activeMessageId"]]["parts"])


async def test_markdown_export_is_the_active_line_with_images_as_links(
    client: Client, alice: dict[str, str]
) -> None:
    session = await rich_session(client, alice)
    response = await exported(client, alice, session, "markdown")
    assert response.headers["content-type"].startswith("text/markdown")
    text = response.text
    assert text.startswith("# what is this?\n")
    assert "what is this?" in text
    assert "![wallaby.png](http://127.0.0.1:8000/storage/v1/object/sign/iris/agent-inputs/alice/" in text
    assert "## Tool `current_time`" in text
    assert "say less" in text
    assert "say more" not in text  # edited away: not on the active line
    assert "> *Thinking:*" in text
    assert text.count("## You") == 3


async def test_import_round_trip_is_identical_and_copies_the_images(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    session = await rich_session(client, alice)
    original = await exported(client, alice, session)
    imported = await client.post(f"{SESSIONS}/import", json=original, headers=alice)
    assert imported.status_code == 201, imported.text
    copy_id = imported.json()["id"]
    assert copy_id != session
    assert imported.json()["title"] == f"{original['session']['title']} (copy)"  # says it is one
    assert imported.json()["pinned"] is False

    again = await exported(client, alice, copy_id)
    assert comparable(again) == comparable(original)  # the whole tree, so the active line too
    assert again["activeMessageId"] == original["activeMessageId"]
    old_line = await chat_history(client, alice, session)
    new_line = await chat_history(client, alice, copy_id)
    assert [(m["id"], m["role"], m["content"]) for m in new_line] == [
        (m["id"], m["role"], m["content"]) for m in old_line
    ]
    await stored.active_line(copy_id)

    (old_image,) = [p for m in original["messages"] for p in m.get("parts", []) if p["type"] == "image"]
    (new_image,) = [p for m in again["messages"] for p in m.get("parts", []) if p["type"] == "image"]
    assert new_image["uploadId"] != old_image["uploadId"]
    assert f"/{copy_id}/uploads/" in new_image["image"]
    url = urlsplit(new_image["image"])
    assert (await client.get(f"{url.path}?{url.query}")).content == image_bytes("PNG", (21, 13))

    # The imported session goes on like any other, its image there for the tools.
    events = await chat(client, alice, {"sessionId": copy_id, "content": "use tool image_info {}"})
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert '"name": "wallaby.png"' in result["content"]
    assert '"width": 21, "height": 13' in result["content"]


async def test_an_import_that_does_not_validate_is_refused_whole(
    client: Client, alice: dict[str, str], auth: Callable[..., dict[str, str]], stored: Stored
) -> None:
    session = await rich_session(client, alice)
    good = await exported(client, alice, session)
    before = await stored.counts()

    def tampered(change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
        body: dict[str, Any] = copy.deepcopy(good)
        change(body)
        return body

    messages = good["messages"]
    tool_at = next(i for i, m in enumerate(messages) if m["role"] == "tool")
    cases: list[tuple[dict[str, Any], str, str | None]] = [
        (tampered(lambda b: b.update(version=2)), "validation_failed", "version"),
        (tampered(lambda b: b.pop("format")), "validation_failed", "format"),
        (tampered(lambda b: b["messages"][0].update(role="system")), "validation_failed", "messages[0].role"),
        (
            tampered(lambda b: b["messages"][1].update(id=messages[0]["id"])),
            "import_invalid",
            "messages[1].id",
        ),
        (
            tampered(lambda b: b["messages"][1].update(parentId="nobody")),
            "import_invalid",
            "messages[1].parentId",
        ),
        (tampered(lambda b: b.update(activeMessageId="nobody")), "import_invalid", "activeMessageId"),
        (
            tampered(lambda b: b["messages"][tool_at]["toolAgentOutput"].update(toolCallId="call_nobody")),
            "import_invalid",
            f"messages[{tool_at}]",
        ),
        (
            tampered(
                lambda b: b["messages"][1].setdefault("parts", []).append({"type": "text", "text": "x"})
            ),
            "import_invalid",
            "messages[1]",
        ),
        (
            tampered(lambda b: b["messages"][1].update(workerAgentOutput={"answer": 1})),
            "import_invalid",
            "messages[1].workerAgentOutput",
        ),
        (
            tampered(lambda b: b["messages"][0]["parts"][1].update(sha256="0" * 64)),
            "import_attachment_unavailable",
            "messages[0].parts[1]",
        ),
    ]
    for body, code, field in cases:
        response = await client.post(f"{SESSIONS}/import", json=body, headers=alice)
        assert response.status_code == 422, (code, response.text)
        assert (response.json()["code"], response.json().get("field")) == (code, field), response.json()
    # Someone else's images are not theirs to copy.
    theirs = await client.post(f"{SESSIONS}/import", json=good, headers=auth("bob"))
    assert (theirs.status_code, theirs.json()["code"]) == (422, "import_attachment_unavailable")
    assert await stored.counts() == before

    # Without the image, bob may keep a copy of the words.
    words_only = tampered(lambda b: b["messages"][0].update(parts=[b["messages"][0]["parts"][0]]))
    accepted = await client.post(f"{SESSIONS}/import", json=words_only, headers=auth("bob"))
    assert accepted.status_code == 201, accepted.text
    assert (await stored.counts())[0] == before[0] + 1
