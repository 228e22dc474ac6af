"""The tool conformance suite: what every tool, built in or plugged in, must honour.

A tool loads from its factory and speaks this SPI version; its definition is a valid name, a
description, an ``object`` JSON Schema that is itself valid, a positive timeout and an approval rule;
a call with the example arguments returns a :class:`~iris.tools.content.ToolResult` with a one-line
summary and well-formed parts (images that decode, JSON that encodes) within its timeout; and
arguments its schema refuses fail with :class:`~iris.tools.spec.ToolFailed`, never another exception.

Subclass :class:`ToolConformance` in a pytest module, or call :func:`check_tool` from anything else.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import jsonschema
import msgspec
import pytest
from PIL import Image

from iris.tools.content import ImageContent, ToolResult
from iris.tools.spec import (
    TOOL_NAME_PATTERN,
    TOOL_SPEC_VERSION,
    Tool,
    ToolContext,
    ToolFactory,
    ToolFailed,
    ToolPluginContext,
)


@dataclass
class Reports:
    """What a call reported through its context's hooks: ``progress`` as ``(progress, total, message)``
    and ``logs`` as ``(level, message, logger)``, in order."""

    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)
    logs: list[tuple[str, str, str | None]] = field(default_factory=list)


def tool_context(images: Sequence[Mapping[str, Any]] = (), reports: Reports | None = None) -> ToolContext:
    """A context for calling a tool outside Iris: a fixed clock, no uploads to delete; with ``reports``,
    the progress and log hooks record into it (else they are unset, as a core that does not listen)."""

    async def delete_upload(upload_id: str) -> None:
        raise ToolFailed(f"no upload {upload_id!r} here")

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        assert reports is not None
        assert math.isfinite(progress), f"progress {progress} is not a finite number"
        reports.progress.append((progress, total, message))

    def log(level: str, message: str, logger: str | None) -> None:
        assert reports is not None
        reports.logs.append((level, message, logger))

    return ToolContext(
        user_id="conformance",
        thread_id="conformance",
        images=images,
        now=lambda: dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC),
        delete_upload=delete_upload,
        progress=on_progress if reports is not None else None,
        log=log if reports is not None else None,
    )


async def call_tool(
    tool: Tool, arguments: Mapping[str, Any], context: ToolContext | None = None
) -> ToolResult:
    """One call bounded by the tool's own timeout, as the core runs it."""
    async with asyncio.timeout(tool.definition.timeout_seconds):
        return await tool.call(arguments, context or tool_context())


def check_result(result: ToolResult) -> None:
    """A result Iris can store and show: a one-line summary, parts that are what they say."""
    assert isinstance(result, ToolResult), f"call returned {type(result).__name__}, not a ToolResult"
    assert result.summary.strip(), "the summary is empty"
    assert "\n" not in result.summary, "the summary is more than one line"
    for part in result.content:
        if isinstance(part, ImageContent):
            with Image.open(io.BytesIO(part.data)) as image:
                image.verify()
    msgspec.json.encode(result.structured)  # structured data must be JSON


def check_definition(tool: Tool) -> None:
    """A tool that speaks this SPI, with a definition the core and every vendor accept."""
    assert isinstance(tool, Tool), f"the factory returned {type(tool).__name__}, not a Tool"
    assert tool.spec_version == TOOL_SPEC_VERSION, tool.spec_version
    definition = tool.definition
    assert TOOL_NAME_PATTERN.match(definition.name), definition.name
    assert "__" not in definition.name, "'__' is reserved for MCP tools ({server}__{tool})"
    assert definition.description.strip(), "a tool needs a description the model can read"
    assert definition.parameters.get("type") == "object", "parameters must be an object schema"
    jsonschema.Draft202012Validator.check_schema(definition.parameters)
    assert definition.timeout_seconds > 0
    assert definition.approval in ("always", "never", "destructive")


def check_tool(
    factory: ToolFactory,
    example_arguments: Mapping[str, Any] | None,
    *,
    environ: Mapping[str, str] | None = None,
    bad_arguments: Mapping[str, Any] | None = None,
) -> Tool:
    """Every check, for code that is not pytest; returns the tool."""
    tool = factory(ToolPluginContext(environ=dict(environ or {})))
    check_definition(tool)
    if example_arguments is not None:
        jsonschema.validate(dict(example_arguments), tool.definition.parameters)
        check_result(asyncio.run(call_tool(tool, example_arguments)))
    if bad_arguments is not None:
        try:
            asyncio.run(call_tool(tool, bad_arguments))
        except ToolFailed:
            pass
        else:
            raise AssertionError("arguments the schema refuses did not fail with ToolFailed")
    return tool


class ToolConformance:
    """Subclass in a pytest module and set ``factory`` (and ``example_arguments``, ``bad_arguments``,
    ``environ`` as the tool needs)."""

    factory: ClassVar[staticmethod[[ToolPluginContext], Tool]]
    example_arguments: ClassVar[Mapping[str, Any] | None] = None
    """Arguments of a call that should succeed offline (``None``: calls are not checked)."""
    bad_arguments: ClassVar[Mapping[str, Any] | None] = {"no such argument": True}
    """Arguments the tool must refuse with ``ToolFailed`` (``None``: not checked)."""
    environ: ClassVar[Mapping[str, str]] = {}

    @pytest.fixture
    def tool(self) -> Tool:
        return type(self).factory(ToolPluginContext(environ=dict(self.environ)))

    def test_definition(self, tool: Tool) -> None:
        check_definition(tool)

    # Synchronous tests with a loop of their own: the kit needs no asyncio plugin in the tool's project.
    def test_call_returns_a_result(self, tool: Tool) -> None:
        if self.example_arguments is None:
            pytest.skip("no example_arguments: calls are not checked")
        jsonschema.validate(dict(self.example_arguments), tool.definition.parameters)
        check_result(asyncio.run(call_tool(tool, self.example_arguments)))

    def test_bad_arguments_fail_cleanly(self, tool: Tool) -> None:
        if self.bad_arguments is None:
            pytest.skip("no bad_arguments")
        with pytest.raises(ToolFailed):
            asyncio.run(call_tool(tool, self.bad_arguments))
