"""A running tool's progress seen from another process: instance A runs an MCP tool that reports progress,
instance B re-attaches with ``?snapshot=messages`` and reads, from the shared event log, the conversation
as a ``MESSAGES_SNAPSHOT`` and the same ``ACTIVITY_SNAPSHOT``/``ACTIVITY_DELTA`` events A streamed, with
the same ids (PostgreSQL, where B is woken by A's notices)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from iris.app.settings import Settings
from tests.conftest import JWT_SECRET
from tests.support.activity import activity_of, apply_activity
from tests.support.agui import check_stream, parse_sse_with_comments
from tests.support.iris_process import iris_process
from tests.support.mcp_servers import stdio_entry
from tests.support.postgres import free_port
from tests.support.run_fixtures import Stored
from tests.support.runs import run_input, user_message
from tests.support.waits import REQUEST_SECONDS

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("engine_name", ["postgresql"], indirect=True)]


def test_progress_of_a_tool_running_on_one_instance_is_followed_from_another(
    settings: Settings,
    tmp_path: Path,
    alice: dict[str, str],
    auth: Callable[..., dict[str, str]],
    stored: Stored,
) -> None:
    port = free_port()
    env = {
        "IRIS_DATA_DIR": settings.data_dir,
        "IRIS_DATABASE_URL": settings.effective_database_url,
        "IRIS_JWT_SECRET": JWT_SECRET,
        "IRIS_PUBLIC_URL": f"http://127.0.0.1:{port}",
    }
    marks = tmp_path / "marks"
    marks.mkdir()
    server = {**stdio_entry("counter", marks), "connectTimeoutSeconds": 60}
    text = "use tool counter__count " + json.dumps({"steps": 4, "pause": 0.5})
    body = run_input(str(uuid.uuid4()), user_message(text))
    with (
        iris_process(env, port, tmp_path / "a.log") as a,
        iris_process(env, free_port(), tmp_path / "b.log") as b,
    ):
        added = httpx.post(
            f"{a.base_url}/api/mcp-servers", json=server, headers=auth("root", role="admin"), timeout=90
        )
        assert added.status_code == 201, added.text
        asyncio.run(stored.set_agent_tools(["mcp:counter/*"]))
        with (
            httpx.Client(base_url=a.base_url, timeout=REQUEST_SECONDS) as client,
            client.stream("POST", "/agent/runs", json=body, headers=alice) as response,
        ):
            assert response.status_code == 200
            on_a, chunks = b"", response.iter_bytes()
            for chunk in chunks:
                on_a += chunk
                if b"ACTIVITY_SNAPSHOT" in on_a:
                    break
            url = f"{b.base_url}/agent/runs/{body['runId']}/events?snapshot=messages"
            followed = httpx.get(url, headers=alice, timeout=REQUEST_SECONDS)
            on_a += b"".join(chunks)

    assert followed.status_code == 200
    events = check_stream(followed.content)
    assert [e["type"] for e in events[:2]] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    (user,) = events[1]["messages"]
    assert user["id"] == body["messages"][0]["id"]
    assert events[2:] == check_stream(on_a)[1:]  # the run's events, each once, in order
    frames = parse_sse_with_comments(followed.content)[0]
    assert frames[1].id is None  # the snapshot is not one of the run's events
    assert [f.id for f in frames[:1] + frames[2:]] == [f.id for f in parse_sse_with_comments(on_a)[0]]
    final = apply_activity(activity_of(events))
    assert (final["progress"], final["total"], final["status"]) == (4, 4, "succeeded")
    assert len(final["logs"]) == 4
