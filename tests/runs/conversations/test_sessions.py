"""Keeping sessions: rename, pin and archive; the list puts pinned ones first, then the most recently
active, pages with ``nextOffset``, and leaves archived ones to ``?archived=true``. Both engines."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.support.runs import chat

Client = AsyncTestClient[Litestar]
SESSIONS = "/api/agents/default/sessions"


async def listed(client: Client, headers: dict[str, str], query: str = "") -> dict[str, Any]:
    response = await client.get(f"{SESSIONS}{query}", headers=headers)
    assert response.status_code == 200, response.text
    page: dict[str, Any] = response.json()
    return page


async def new_session(client: Client, headers: dict[str, str], text: str) -> str:
    session: str = (await chat(client, headers, {"content": text}))[0]["threadId"]
    return session


async def test_rename_pin_and_archive(client: Client, alice: dict[str, str]) -> None:
    oldest, middle, newest = [await new_session(client, alice, text) for text in ("one", "two", "three")]
    assert [s["id"] for s in (await listed(client, alice))["sessions"]] == [newest, middle, oldest]

    pinned = await client.patch(f"{SESSIONS}/{oldest}", json={"pinned": True}, headers=alice)
    assert pinned.status_code == 200, pinned.text
    assert pinned.json()["pinned"] is True
    assert pinned.json()["title"] == "one"  # only the fields sent change
    renamed = await client.patch(f"{SESSIONS}/{middle}", json={"title": "  Two,   renamed "}, headers=alice)
    assert renamed.json()["title"] == "Two, renamed"
    assert renamed.json()["pinned"] is False
    page = (await listed(client, alice))["sessions"]
    assert [(s["id"], s["pinned"]) for s in page] == [(oldest, True), (newest, False), (middle, False)]

    await chat(client, alice, {"sessionId": middle, "content": "more"})  # activity moves it up
    assert [s["id"] for s in (await listed(client, alice))["sessions"]] == [oldest, middle, newest]

    archived = await client.patch(f"{SESSIONS}/{newest}", json={"archived": True}, headers=alice)
    assert archived.json()["archived"] is True
    assert [s["id"] for s in (await listed(client, alice))["sessions"]] == [oldest, middle]
    assert [s["id"] for s in (await listed(client, alice, "?archived=true"))["sessions"]] == [newest]
    # An archived session still opens and takes messages; unarchived, it is back in the list.
    await chat(client, alice, {"sessionId": newest, "content": "still here"})
    await client.patch(f"{SESSIONS}/{newest}", json={"archived": False, "pinned": True}, headers=alice)
    assert [s["id"] for s in (await listed(client, alice))["sessions"]][:2] == [newest, oldest]


async def test_the_list_is_paged(client: Client, alice: dict[str, str]) -> None:
    made = [await new_session(client, alice, f"chat {i}") for i in range(5)]
    first = await listed(client, alice, "?limit=2")
    assert [s["id"] for s in first["sessions"]] == made[:-3:-1]
    assert first["nextOffset"] == 2
    second = await listed(client, alice, "?limit=2&offset=2")
    third = await listed(client, alice, "?limit=2&offset=4")
    assert [s["id"] for s in [*first["sessions"], *second["sessions"], *third["sessions"]]] == made[::-1]
    assert "nextOffset" not in third


async def test_refusals(client: Client, alice: dict[str, str], auth: Callable[..., dict[str, str]]) -> None:
    session = await new_session(client, alice, "mine")
    cases: list[tuple[dict[str, Any], str | None]] = [
        ({"title": "   "}, "title"),
        ({"title": ""}, "title"),
        ({"title": "x" * 201}, "title"),
        ({"pinned": "yes"}, "pinned"),
        ({"color": "red"}, "color"),
    ]
    for body, field in cases:
        response = await client.patch(f"{SESSIONS}/{session}", json=body, headers=alice)
        assert response.status_code == 422, (body, response.text)
        assert (response.json()["code"], response.json().get("field")) == ("validation_failed", field), body
    theirs = await client.patch(f"{SESSIONS}/{session}", json={"pinned": True}, headers=auth("bob"))
    assert (theirs.status_code, theirs.json()["code"]) == (404, "thread_not_found")
    assert (await listed(client, alice))["sessions"][0]["title"] == "mine"  # nothing changed


async def test_a_session_keeps_its_model(client: Client, alice: dict[str, str]) -> None:
    """The model a chat continues with is stored with it: its history says which (so any device
    reopening it picks it), a PATCH changes it, and the next run without ``modelId`` uses it."""
    offered = (await client.get("/api/agents/default/models", headers=alice)).json()
    by_ref = {f"{m['provider']}/{m['modelId']}": m["id"] for m in offered["models"]}
    session = await new_session(client, alice, "hello")
    history = await client.get(f"{SESSIONS}/{session}/messages", headers=alice)
    assert (history.json()["title"], history.json()["modelId"]) == ("hello", offered["defaultModelId"])

    changed = await client.patch(
        f"{SESSIONS}/{session}", json={"modelId": by_ref["local/text"]}, headers=alice
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["modelId"] == by_ref["local/text"]
    reread = await client.get(f"{SESSIONS}/{session}/messages", headers=alice)
    assert reread.json()["modelId"] == by_ref["local/text"]
    events = await chat(client, alice, {"sessionId": session, "content": "which model?"})
    finished = next(e for e in events if e["type"] == "RUN_FINISHED")
    assert finished["usage"][0]["model"] == "text", finished

    for wrong in ("not-a-model", "00000000-0000-0000-0000-000000000000"):
        refused = await client.patch(f"{SESSIONS}/{session}", json={"modelId": wrong}, headers=alice)
        assert refused.status_code == 422, refused.text
        assert refused.json()["code"] == "model_not_in_agent"
