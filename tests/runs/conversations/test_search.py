"""Search over a user's conversations: titles, text, tool summaries and attachment names, ranked, with
a highlighted snippet and the message to jump to; the index follows every write (edits, switches,
renames, deletes) and never shows anyone another user's conversations. Both engines."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.persistence.repositories import search as search_repository
from tests.support.images import image_bytes
from tests.support.run_fixtures import Stored
from tests.support.runs import chat, chat_history, upload

Client = AsyncTestClient[Litestar]
SESSIONS = "/api/agents/default/sessions"


async def search(client: Client, headers: dict[str, str], query: str) -> list[dict[str, Any]]:
    response = await client.get("/api/sessions/search", params={"q": query}, headers=headers)
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


def message_hits(results: list[dict[str, Any]]) -> list[str]:
    return [r["messageId"] for r in results if "messageId" in r]


async def test_search_finds_text_tool_summaries_and_attachment_names_of_the_callers_own(
    client: Client, alice: dict[str, str], auth: Callable[..., dict[str, str]]
) -> None:
    bob = auth("bob")
    session = str(uuid.uuid4())
    image = await upload(client, alice, session, name="sunset-over-Uluru.png")
    await chat(client, alice, {"sessionId": session, "parts": [image["parts"]["chat"]]})
    await chat(
        client,
        alice,
        {"sessionId": session, "content": 'use tool current_time {"timezone": "Australia/Sydney"}'},
    )
    await chat(client, alice, {"sessionId": session, "content": "a platypus swims"})
    bobs = (await chat(client, bob, {"content": "a platypus of bob's"}))[0]["threadId"]
    line = await chat_history(client, alice, session)

    by_name = await search(client, alice, "sunset")  # the attachment's name, on the user message
    assert message_hits(by_name) == [line[0]["id"]]
    assert by_name[0]["sessionId"] == session
    assert by_name[0]["agentSlug"] == "default"
    assert "<mark>sunset</mark>" in by_name[0]["snippet"]
    tool = next(m for m in line if m["role"] == "tool")
    assert tool["id"] in message_hits(await search(client, alice, "sydney"))  # the tool's summary
    assert tool["id"] in message_hits(await search(client, alice, "current_time"))  # and its name

    mine = await search(client, alice, "platypus")
    assert {r["sessionId"] for r in mine} == {session}  # bob's platypus is bob's
    assert {r["sessionId"] for r in await search(client, bob, "platypus")} == {bobs}
    assert await search(client, bob, "sunset") == []
    assert await search(client, auth("carol"), "platypus") == []

    # Every word must match, each as the start of a word; punctuation and case do not matter.
    assert line[-2]["id"] in message_hits(await search(client, alice, "PLATY swi"))
    assert await search(client, alice, "platypus kangaroo") == []
    assert await search(client, alice, "¿¡!") == []


async def test_titles_rank_and_snippets_are_escaped(client: Client, alice: dict[str, str]) -> None:
    titled = (await chat(client, alice, {"content": "wombat burrows"}))[0]["threadId"]
    other = (await chat(client, alice, {"content": "<b>not bold</b> and one wombat"}))[0]["threadId"]
    await chat(client, alice, {"sessionId": other, "content": "wombat wombat wombat wombat facts"})
    results = await search(client, alice, "wombat")
    assert {r["sessionId"] for r in results} == {titled, other}
    title_hits = [r for r in results if "messageId" not in r]
    assert {r["title"] for r in title_hits} == {"wombat burrows", "<b>not bold</b> and one wombat"}
    escaped = next(r["snippet"] for r in results if "bold" in r["snippet"])
    assert "&lt;b&gt;not bold&lt;/b&gt;" in escaped
    assert "<mark>wombat</mark>" in escaped
    assert "<b>" not in escaped
    # The message saying it four times outranks the ones that say it once.
    assert "wombat wombat wombat wombat" in next(r["snippet"] for r in results if "messageId" in r).replace(
        "<mark>", ""
    ).replace("</mark>", "")


async def test_the_index_follows_edits_switches_renames_and_deletes(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    session = (await chat(client, alice, {"content": "about the echidna"}))[0]["threadId"]
    await chat(client, alice, {"sessionId": session, "content": "echidna spines"})
    original = (await chat_history(client, alice, session))[2]
    await chat(
        client, alice, {"sessionId": session, "editMessageId": original["id"], "content": "quoll spots"}
    )
    edited = (await chat_history(client, alice, session))[2]

    assert edited["id"] in message_hits(await search(client, alice, "quoll"))
    assert original["id"] not in message_hits(await search(client, alice, "spines"))  # edited away

    await client.post(f"{SESSIONS}/{session}/active", json={"messageId": original["id"]}, headers=alice)
    assert original["id"] in message_hits(await search(client, alice, "spines"))  # switched back
    assert message_hits(await search(client, alice, "quoll")) == []

    renamed = await client.patch(f"{SESSIONS}/{session}", json={"title": "Monotremes"}, headers=alice)
    assert renamed.status_code == 200, renamed.text
    assert [r.get("title") for r in await search(client, alice, "monotreme")] == ["Monotremes"]
    assert [r for r in await search(client, alice, "about") if "messageId" not in r] == []  # old title

    # A message deleted from the database leaves the index with it.
    await stored.delete_message(original["id"])
    assert message_hits(await search(client, alice, "spines")) == []

    assert (await client.delete(f"{SESSIONS}/{session}", headers=alice)).status_code == 204
    assert await search(client, alice, "echidna") == []
    assert await search(client, alice, "monotremes") == []


async def test_archived_sessions_stay_searchable_and_bad_queries_are_refused(
    client: Client, alice: dict[str, str]
) -> None:
    session = (await chat(client, alice, {"content": "a numbat eats termites"}))[0]["threadId"]
    await client.patch(f"{SESSIONS}/{session}", json={"archived": True}, headers=alice)
    assert {r["sessionId"] for r in await search(client, alice, "numbat")} == {session}
    refused: list[tuple[dict[str, str | int], int, str, str | None]] = [
        ({"q": ""}, 422, "validation_failed", "q"),
        ({"q": "x" * 201}, 422, "validation_failed", "q"),
        ({"q": "a", "limit": 0}, 422, "validation_failed", "limit"),
        ({}, 400, "malformed_body", None),  # no q at all: Litestar's bare 400, as documented
    ]
    for params, status, code, field in refused:
        response = await client.get("/api/sessions/search", params=params, headers=alice)
        assert response.status_code == status, (params, response.text)
        assert (response.json()["code"], response.json().get("field")) == (code, field)
    unauthenticated = await client.get("/api/sessions/search", params={"q": "numbat"})
    assert unauthenticated.status_code == 401


async def test_a_long_message_gives_a_snippet_around_the_hit(client: Client, alice: dict[str, str]) -> None:
    words = [f"filler{i}" for i in range(200)]
    words[150] = "bilby"
    await chat(client, alice, {"content": " ".join(words)})
    (hit, *_) = [r for r in await search(client, alice, "bilby") if "messageId" in r]
    assert hit["snippet"].startswith("…")
    assert hit["snippet"].endswith("…")
    assert "filler149 <mark>bilby</mark> filler151" in hit["snippet"]
    assert len(hit["snippet"]) < 400


async def test_images_in_search_hits_are_named_not_linked(client: Client, alice: dict[str, str]) -> None:
    session = str(uuid.uuid4())
    image = await upload(client, alice, session, data=image_bytes("PNG", (8, 8)), name="quokka.png")
    await chat(client, alice, {"sessionId": session, "parts": [image["parts"]["chat"]]})
    (hit,) = [r for r in await search(client, alice, "quokka") if "messageId" in r]
    assert "storage/v1" not in hit["snippet"]
    assert "<mark>quokka</mark>" in hit["snippet"]


async def test_ranking_is_among_the_owners_newest_matches(
    client: Client,
    alice: dict[str, str],
    auth: Callable[..., dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With room for 3 candidates, Alice's oldest bilby message is not ranked even though it says it
    most; Bob's newer bilby messages take none of her candidates."""
    bob = auth("bob")
    session = (await chat(client, alice, {"content": "first words"}))[0]["threadId"]
    for text in ("bilby bilby bilby bilby", "a bilby", "one bilby", "the bilby"):
        await chat(client, alice, {"sessionId": session, "content": text})
    for _ in range(3):
        await chat(client, bob, {"content": "bob's bilby"})
    line = await chat_history(client, alice, session)
    saying_most = {line[2]["id"], line[3]["id"]}  # the message and its answer, which echoes it
    matching = [m["id"] for m in line if "bilby" in m["content"]]

    assert message_hits(await search(client, alice, "bilby"))[0] in saying_most  # first when ranked
    monkeypatch.setattr(search_repository, "CANDIDATES", 3)
    assert set(message_hits(await search(client, alice, "bilby"))) == set(matching[-3:])
    assert not saying_most & set(matching[-3:])
    assert len(await search(client, bob, "bilby")) == 3
