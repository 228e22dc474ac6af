"""Runs over a real loopback HTTP server: the run outlives a client that disconnects, and a thread
runs one run at a time."""

from __future__ import annotations

import asyncio
import uuid

import httpx

from tests.support.agui import check_stream
from tests.support.runs import run_input, user_message
from tests.support.waits import REQUEST_SECONDS, eventually


async def _history_roles(client: httpx.AsyncClient, thread: str, headers: dict[str, str]) -> list[str]:
    response = await client.get(f"/agent/threads/{thread}/messages", headers=headers)
    assert response.status_code == 200, response.text
    return [m["role"] for m in response.json()["messages"]]


async def test_a_client_that_disconnects_mid_stream_still_finds_the_answer_in_history(
    base_url: str, alice: dict[str, str]
) -> None:
    thread = str(uuid.uuid4())
    words = " ".join(f"w{i}" for i in range(40))  # ~2 s of tokens at 40 ms each
    body = run_input(thread, user_message(words), model="local/slow")
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        async with client.stream("POST", "/agent/runs", json=body, headers=alice) as response:
            assert response.status_code == 200
            seen = b""
            async for chunk in response.aiter_bytes():
                seen += chunk
                if b"TEXT_MESSAGE_CONTENT" in seen:
                    break  # leave mid-answer: the connection closes here
        assert b"RUN_FINISHED" not in seen
        assert await _history_roles(client, thread, alice) == ["user"]  # still running

        async def answered() -> bool:
            return await _history_roles(client, thread, alice) == ["user", "assistant"]

        await eventually(answered, within=REQUEST_SECONDS, what="the answer in the history")
        history = (await client.get(f"/agent/threads/{thread}/messages", headers=alice)).json()["messages"]
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[1]["content"].endswith("w39")


async def test_a_thread_runs_one_run_at_a_time(base_url: str, alice: dict[str, str]) -> None:
    thread = str(uuid.uuid4())
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        slow = run_input(thread, user_message("one two three four five six"), model="local/slow")
        async with client.stream("POST", "/agent/runs", json=slow, headers=alice) as response:
            chunks = response.aiter_bytes()
            first = await anext(chunks)
            assert b"RUN_STARTED" in first
            busy = await client.post(
                "/agent/runs", json=run_input(thread, user_message("again")), headers=alice
            )
            assert busy.status_code == 409
            assert busy.json()["code"] == "run_in_progress"
            body = first + b"".join([chunk async for chunk in chunks])
        check_stream(body)
        after = await client.post("/agent/runs", json=run_input(thread, user_message("again")), headers=alice)
        assert after.status_code == 200
        check_stream(after.content)


async def test_two_runs_sent_at_once_on_a_new_thread_one_runs_and_one_is_refused(
    base_url: str, alice: dict[str, str]
) -> None:
    # The first run's intake commits only once its model is asked; the second must be refused anyway,
    # never accepted and then lost at its own commit (run_not_stored).
    for _ in range(3):
        thread = str(uuid.uuid4())
        bodies = [run_input(thread, user_message(f"hello {i}"), model="local/slow") for i in range(2)]
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
            sent = (client.post("/agent/runs", json=body, headers=alice) for body in bodies)
            answers = await asyncio.gather(*sent)
        assert sorted(a.status_code for a in answers) == [200, 409], [a.text[:200] for a in answers]
        refused = next(a for a in answers if a.status_code == 409)
        assert refused.json()["code"] == "run_in_progress"
        accepted = next(a for a in answers if a.status_code == 200)
        check_stream(accepted.content)
        assert b"RUN_FINISHED" in accepted.content
