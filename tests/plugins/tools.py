"""Tool plugins, good and broken in each way the tool registry must survive."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from iris.tools import (
    TOOL_SPEC_VERSION,
    TextContent,
    ToolContext,
    ToolDefinition,
    ToolHints,
    ToolPluginContext,
    ToolResult,
)

IMPORTED = True


class Echo:
    """A well-behaved plugin tool (read-only: it never asks)."""

    spec_version = TOOL_SPEC_VERSION
    definition = ToolDefinition(
        name="echo",
        description="Say the text back.",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        hints=ToolHints(read_only=True),
        timeout_seconds=5,
    )

    async def call(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        text = arguments.get("text")
        if not isinstance(text, str) or set(arguments) != {"text"}:
            from iris.tools import ToolFailed

            raise ToolFailed("give exactly one argument, text")
        return ToolResult(summary=f"echoed {len(text)} characters", content=(TextContent(text=text),))


def echo(context: ToolPluginContext) -> Echo:
    return Echo()


def raises(context: ToolPluginContext) -> Any:
    raise RuntimeError("cannot reach the licence server")


def not_a_tool(context: ToolPluginContext) -> Any:
    return object()


class _Sleepy(Echo):
    definition = ToolDefinition(
        name="sleepy",
        description="Never answers in time.",
        parameters={"type": "object"},
        hints=ToolHints(read_only=True),
        timeout_seconds=0.2,
    )

    async def call(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        await asyncio.sleep(60)
        raise AssertionError("unreachable")


def sleepy(context: ToolPluginContext) -> _Sleepy:
    return _Sleepy()


class _Crashy(Echo):
    definition = ToolDefinition(
        name="crashy", description="Raises a bug.", parameters={"type": "object"}, approval="never"
    )

    async def call(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        raise KeyError("a bug in the plugin")


def crashy(context: ToolPluginContext) -> _Crashy:
    return _Crashy()


class _Steps(Echo):
    """Counts, reporting its progress and a log line at each step through the context's hooks."""

    definition = ToolDefinition(
        name="steps",
        description="Count to count, slowly.",
        parameters={"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]},
        hints=ToolHints(read_only=True),
        timeout_seconds=20,
    )

    async def call(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        count = int(arguments["count"])
        for step in range(1, count + 1):
            await asyncio.sleep(0.3)
            await context.report_progress(step, count, f"step {step} of {count}")
            if context.log is not None:
                context.log("info", f"counted {step}", "steps")
        return ToolResult(summary=f"counted to {count}")


def steps(context: ToolPluginContext) -> _Steps:
    return _Steps()
