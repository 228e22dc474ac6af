"""``useChat``'s stream where it meets failure and other processes, read by the AI SDK's own client
code: a vendor that cuts its answer mid-stream (one ``error`` chunk, then the end), and resume: a
running answer re-attached through a second Iris process on the same PostgreSQL database
(``reconnectToStream``), the whole answer replayed and then followed live."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from iris.app.settings import Settings
from tests.conftest import JWT_SECRET
from tests.gateway.conftest import Gateway
from tests.support.agents import offer_sync
from tests.support.iris_process import iris_process
from tests.support.postgres import free_port
from tests.support.run_fixtures import SLOW_MODEL
from tests.support.ui_chat import flow, text_of, types, user_message, user_token
from tests.support.waits import REQUEST_SECONDS


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
def test_a_vendor_failure_mid_stream_is_one_error_chunk(ai: Path, gateway: Gateway) -> None:
    admin = {"Authorization": f"Bearer {user_token('root', role='admin')}"}
    offer_sync(gateway.base, admin, "openai/gpt-4o")
    gateway.openai.broken("Hello ", "wor")
    chat = f"chat-{uuid.uuid4().hex}"
    body = {"modelId": "openai/gpt-4o"}
    sent = flow(ai, gateway.base, "ivy", "send", chat, messages=[user_message("hi")], body=body)
    seen = types(sent)
    assert seen[0] == "start"
    assert "text-delta" in seen
    assert seen[-1] == "error", seen  # one error chunk ends it: no finish after it
    assert seen.count("error") == 1
    assert sent["errors"] == [sent["chunks"][-1]["errorText"]]  # the SDK reported it
    assert text_of(sent["message"]).startswith("Hello")


@pytest.fixture
def two_processes(settings: Settings, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two Iris processes on one database, the slow local model offered."""
    port = free_port()
    env = {
        "IRIS_DATA_DIR": settings.data_dir,
        "IRIS_DATABASE_URL": settings.effective_database_url,
        "IRIS_JWT_SECRET": JWT_SECRET,
        "IRIS_PUBLIC_URL": f"http://127.0.0.1:{port}",
    }
    with iris_process(env, port, tmp_path / "a.log") as a:
        admin = {"Authorization": f"Bearer {user_token('root', role='admin')}"}
        created = httpx.post(
            f"{a.base_url}/api/models", json=SLOW_MODEL, headers=admin, timeout=REQUEST_SECONDS
        )
        assert created.status_code == 201, created.text
        offer_sync(a.base_url, admin, "local/slow")
        with iris_process(env, free_port(), tmp_path / "b.log") as b:
            yield a.base_url, b.base_url


def read_until(chunks: Iterator[bytes], marker: bytes) -> bytes:
    seen = b""
    for chunk in chunks:
        seen += chunk
        if marker in seen:
            break
    return seen


@pytest.mark.parametrize("engine_name", ["postgresql"], indirect=True)
def test_a_running_answer_resumes_through_another_process(
    ai: Path, two_processes: tuple[str, str], auth: Callable[..., dict[str, str]]
) -> None:
    a, b = two_processes
    chat = f"chat-{uuid.uuid4().hex}"
    words = " ".join(f"w{i}" for i in range(60))
    body = {"id": chat, "messages": [user_message(words)], "modelId": "local/slow"}
    with (
        httpx.Client(base_url=a, timeout=REQUEST_SECONDS) as client,
        client.stream("POST", "/api/agents/default/ui-chat", json=body, headers=auth("jo")) as response,
    ):
        assert response.status_code == 200
        chunks = response.iter_bytes()
        on_a = read_until(chunks, b'"text-delta"')
        assert b'"finish"' not in on_a  # still streaming on A
        resumed = flow(ai, b, "jo", "reconnect", chat)
        on_a += b"".join(chunks)

    assert resumed["errors"] == []
    assert types(resumed)[-1] == "finish"
    started = resumed["chunks"][0]
    assert started["type"] == "start"
    assert f'"messageId":"{started["messageId"]}"'.encode() in on_a  # the same answer, the same id
    assert f"You said: {words}" in text_of(resumed["message"])
    assert on_a.endswith(b"data: [DONE]\n\n")
    assert flow(ai, b, "jo", "reconnect", chat) == {"none": True}  # over now: 204
