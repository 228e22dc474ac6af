"""Tool plugins: the ``iris.tools`` registry (lazy, failure-isolated, like the provider registry), the
conformance kit that ships with the SPI (run here on every built-in), and plugin tools in real runs —
a broken plugin breaks nothing else, a slow or buggy one is a tool error the model reads."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from importlib.metadata import EntryPoint
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from iris.tools import ToolPluginContext, needs_approval
from iris.tools.builtin import current_time, delete_attachment, image_info
from iris.tools.names import mcp_tool_name, parse_tool_ref
from iris.tools.registry import GROUP, ToolRegistry
from iris.tools.spec import Tool, ToolHints
from iris.tools.testing import Reports, ToolConformance, call_tool, tool_context
from tests.support.run_fixtures import Stored
from tests.support.runs import answer_text, of_type, run, run_input, user_message

Client = AsyncTestClient[Litestar]


def ep(name: str, value: str) -> EntryPoint:
    return EntryPoint(name=name, value=value, group=GROUP)


PLUGINS = [
    ep("echo", "tests.plugins.tools:echo"),
    ep("missing", "tests.plugins.does_not_exist:create"),
    ep("raises", "tests.plugins.tools:raises"),
    ep("notatool", "tests.plugins.tools:not_a_tool"),
    ep("misnamed", "tests.plugins.tools:echo"),
    ep("sleepy", "tests.plugins.tools:sleepy"),
    ep("crashy", "tests.plugins.tools:crashy"),
    ep("current_time", "iris.tools.builtin:current_time"),
]


def registry() -> ToolRegistry:
    return ToolRegistry(ToolPluginContext(environ={}), entry_points_=PLUGINS)


def test_broken_plugins_are_listed_with_their_error_and_the_others_load() -> None:
    loaded, failed = registry().load_all()
    assert set(loaded) == {"echo", "sleepy", "crashy", "current_time"}
    errors = {f.name: f.error for f in failed}
    assert set(errors) == {"missing", "raises", "notatool", "misnamed"}
    assert "ModuleNotFoundError" in errors["missing"]
    assert "licence server" in errors["raises"]
    assert "did not return a Tool" in errors["notatool"]
    assert "calls itself 'echo'" in errors["misnamed"]


def test_loading_is_lazy() -> None:
    sys.modules.pop("tests.plugins.tools", None)
    tools = registry()
    assert "echo" in tools.names
    assert "tests.plugins.tools" not in sys.modules
    assert tools.get("echo") is not None
    assert "tests.plugins.tools" in sys.modules
    assert tools.source("echo") == "plugin:tests.plugins.tools"
    assert tools.source("current_time") == "builtin"


def test_the_built_ins_register_through_the_entry_point_group() -> None:
    installed = ToolRegistry(ToolPluginContext(environ={}))
    assert {"image_info", "current_time", "delete_attachment"} <= set(installed.names)
    assert installed.source("image_info") == "builtin"


def test_approval_reads_the_rule_then_the_hints() -> None:
    assert needs_approval("always", ToolHints(read_only=True))
    assert not needs_approval("never", ToolHints(destructive=True))
    assert needs_approval("destructive", ToolHints())  # no annotations: ask
    assert not needs_approval("destructive", ToolHints(read_only=True))
    assert needs_approval("destructive", ToolHints(read_only=True, destructive=True))
    assert needs_approval("destructive", ToolHints(read_only=False, destructive=False))


def test_tool_names_agents_use() -> None:
    assert parse_tool_ref("current_time").kind == "tool"
    ref = parse_tool_ref("charts__chart")
    assert (ref.kind, ref.server, ref.tool) == ("mcp_tool", "charts", "chart")
    whole = parse_tool_ref("mcp:charts/*")
    assert (whole.kind, whole.server) == ("mcp_server", "charts")
    assert mcp_tool_name("charts", "draw.bar chart") == "charts__draw_bar_chart"
    assert len(mcp_tool_name("s" * 32, "t" * 80)) == 64


class TestImageInfo(ToolConformance):
    factory = staticmethod(image_info)
    example_arguments = None  # needs the thread's images: covered by the run tests


class TestCurrentTime(ToolConformance):
    factory = staticmethod(current_time)
    example_arguments = {"timezone": "Europe/Paris"}


class TestDeleteAttachment(ToolConformance):
    factory = staticmethod(delete_attachment)


def echo_from_the_registry(context: ToolPluginContext) -> Tool:
    """The echo plugin as the registry loads it from its entry point."""
    tool = registry().get("echo")
    assert tool is not None
    return tool


class TestEchoPlugin(ToolConformance):
    factory = staticmethod(echo_from_the_registry)
    example_arguments = {"text": "hi"}


# -- plugin tools in runs ----------------------------------------------------------------------------


@pytest.fixture
async def client(settings: Settings, stored: Stored) -> AsyncIterator[Client]:
    app = create_app(settings, environ={}, tool_registry=registry())
    async with AsyncTestClient(app=app) as test_client:
        await stored.set_agent_tools(["echo", "sleepy", "crashy", "raises", "current_time"])
        yield test_client


@pytest.fixture
def stored(database_url: str) -> Stored:
    return Stored(database_url)


@pytest.fixture
def alice(auth: Callable[..., dict[str, str]]) -> dict[str, str]:
    return auth("alice")


def output(events: list[dict[str, Any]]) -> dict[str, Any]:
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    found: dict[str, Any] = result["metadata"]["iris/toolAgentOutput"]
    return found


async def test_a_plugin_tool_runs_and_a_broken_plugin_is_simply_not_offered(
    client: Client, alice: dict[str, str]
) -> None:
    events = await run(
        client, alice, run_input(str(uuid.uuid4()), user_message('use tool echo {"text": "hey"}'))
    )
    assert output(events)["content"] == [{"type": "text", "text": "hey"}]
    assert output(events)["resultSummary"] == "echoed 3 characters"
    missing = await run(client, alice, run_input(str(uuid.uuid4()), user_message("use tool raises {}")))
    assert "I have no tool called raises." in answer_text(missing)


@pytest.mark.parametrize(
    ("tool", "error"),
    [("sleepy", "it did not answer within 0.2 s"), ("crashy", "KeyError: 'a bug in the plugin'")],
)
async def test_a_slow_or_buggy_plugin_is_a_tool_error(
    client: Client, alice: dict[str, str], tool: str, error: str
) -> None:
    events = await run(client, alice, run_input(str(uuid.uuid4()), user_message(f"use tool {tool} {{}}")))
    assert output(events)["status"] == "failed"
    assert output(events)["error"] == error
    assert events[-1]["outcome"]["type"] == "success"


async def test_get_api_tools_lists_plugins_and_failures(
    client: Client, auth: Callable[..., dict[str, str]], alice: dict[str, str]
) -> None:
    assert (await client.get("/api/tools", headers=alice)).status_code == 403
    listed = (await client.get("/api/tools", headers=auth("root", role="admin"))).json()
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert tools["echo"]["source"] == "plugin:tests.plugins.tools"
    assert tools["echo"]["needsApproval"] is False
    assert tools["echo"]["parameters"]["required"] == ["text"]
    assert tools["current_time"]["source"] == "builtin"
    assert {f["name"] for f in listed["failed"]} == {"missing", "raises", "notatool", "misnamed"}


def test_a_plugin_reports_progress_through_its_context() -> None:
    """The SPI's optional hooks, as the conformance kit records them; a core that does not listen (no
    hooks set) makes ``report_progress`` a no-op, so the same tool runs unchanged."""
    tool = ToolRegistry(
        ToolPluginContext(environ={}), entry_points_=[ep("steps", "tests.plugins.tools:steps")]
    )
    steps = tool.get("steps")
    assert steps is not None
    reports = Reports()
    result = asyncio.run(call_tool(steps, {"count": 2}, tool_context(reports=reports)))
    assert result.summary == "counted to 2"
    assert reports.progress == [(1, 2, "step 1 of 2"), (2, 2, "step 2 of 2")]
    assert reports.logs == [("info", "counted 1", "steps"), ("info", "counted 2", "steps")]
    assert asyncio.run(call_tool(steps, {"count": 1})).summary == "counted to 1"
