"""The AG-UI reference client (`@ag-ui/client` 1.0, under Node) and the newer events: a plugin tool that
reports progress through its context's hook streams ``ACTIVITY_SNAPSHOT``/``ACTIVITY_DELTA``, which the
client turns into an activity message; a second agent re-attaches to the running run through the client's
own ``connectAgent()`` with ``?snapshot=messages`` and gets the conversation as one ``MESSAGES_SNAPSHOT``
before the run's events. 0 `[ag-ui]` warnings."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from iris.app.asgi import create_app
from iris.app.security.auth import issue_token
from iris.app.settings import Settings
from iris.tools import ToolPluginContext
from iris.tools.registry import GROUP, ToolRegistry
from tests.conftest import JWT_SECRET
from tests.support.http_server import serve_asgi
from tests.support.npm import npm_install
from tests.support.run_fixtures import Stored
from tests.support.waits import SUBPROCESS_SECONDS

SCRIPT = Path(__file__).with_name("agui_activity.cjs")
STEPS = EntryPoint(name="steps", value="tests.plugins.tools:steps", group=GROUP)


@pytest.fixture(scope="module")
def agui_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = npm_install(tmp_path_factory, "@ag-ui/client-activity", "@ag-ui/client")
    shutil.copy(SCRIPT, where / SCRIPT.name)
    return where


@pytest.fixture
def iris_url(settings: Settings) -> Iterator[str]:
    """Iris on a real socket, with the ``steps`` test plugin (it reports progress) among its tools."""
    registry = ToolRegistry(ToolPluginContext(environ={}), entry_points_=[STEPS])
    with serve_asgi(create_app(settings, environ={}, tool_registry=registry), lifespan="on") as base:
        yield base


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
def test_the_reference_client_takes_progress_and_a_snapshot_on_re_attach(
    agui_client: Path, iris_url: str, stored: Stored
) -> None:
    asyncio.run(stored.set_agent_tools(["steps"]))
    token = issue_token(JWT_SECRET, "alice")
    thread = str(uuid.uuid4())
    text = 'use tool steps {"count": 5}'
    result = subprocess.run(
        ["node", SCRIPT.name, iris_url, token, thread, text],
        cwd=agui_client,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
        check=False,
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert "error" not in report, report
    assert report["warnings"] == []
    live = report["live"]
    assert live.index("TOOL_CALL_END") < live.index("ACTIVITY_SNAPSHOT") < live.index("TOOL_CALL_RESULT")
    assert "ACTIVITY_DELTA" in live
    (activity,) = [m for m in report["liveMessages"] if m["role"] == "activity"]
    assert activity["activityType"] == "iris/toolProgress"
    content = activity["content"]
    assert (content["toolName"], content["status"], content["progress"], content["total"]) == (
        "steps",
        "succeeded",
        5,
        5,
    )
    assert content["message"] == "step 5 of 5"
    assert [line["message"] for line in content["logs"]] == [f"counted {n}" for n in range(1, 6)]

    followed = report["followed"]
    assert followed[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    assert followed[-1] == "RUN_FINISHED"
    assert followed.count("MESSAGES_SNAPSHOT") == 1
    assert [m["role"] for m in report["snapshot"]["messages"]] == ["user"]
    assert report["snapshot"]["messages"][0]["id"] == f"m1-{thread}"
    # The follower ends with what the runner has: the input once, the answer, the tool result, the activity.
    roles = [m["role"] for m in report["followedMessages"]]
    assert roles == [m["role"] for m in report["liveMessages"]]
    assert roles.count("user") == 1
    (followed_activity,) = [m for m in report["followedMessages"] if m["role"] == "activity"]
    assert followed_activity["content"] == content
