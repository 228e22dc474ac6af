"""What a server lists, as Iris keeps it: its tools (:class:`McpTool`, with why Iris cannot call one).

Made from the SDK's types by the connection (:mod:`iris.app.mcp.connection`), which is the only importer
of the SDK; this module imports its types only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp_types as mt

from iris.tools import ToolHints


@dataclass(frozen=True, slots=True)
class McpTool:
    """A tool a server listed; the model knows it as ``{server}__{name}``."""

    server: str
    name: str
    description: str
    parameters: dict[str, Any]
    hints: ToolHints
    unavailable: str | None = None
    """Why Iris cannot call it (it is listed, never offered to a model); None when it can."""
    task: bool = False
    """Whether it runs only as a task (:mod:`iris.app.mcp.tasks`)."""
    title: str | None = None
    """Its display name (``title``, else ``annotations.title``), for people, never the model."""
    icons: tuple[dict[str, Any], ...] = ()
    """Its icons as the server lists them (``src``, ``mimeType``, ``sizes``, ``theme``)."""

    @property
    def qualified_name(self) -> str:
        return f"{self.server}__{self.name}"


def listed_tool(server: str, tool: mt.Tool, *, tasks: bool = False) -> McpTool:
    """The tool as Iris keeps it; ``tasks``: whether this connection runs tasks (2025-11-25), else a
    task-only tool is unavailable."""
    notes = tool.annotations
    schema = tool.input_schema if tool.input_schema.get("type") == "object" else {"type": "object"}
    return McpTool(
        server=server,
        name=tool.name,
        description=(tool.description or tool.title or tool.name).strip(),
        parameters=schema,
        hints=ToolHints(
            read_only=notes.read_only_hint,
            destructive=notes.destructive_hint,
            idempotent=notes.idempotent_hint,
            open_world=notes.open_world_hint,
        )
        if notes is not None
        else ToolHints(),
        unavailable=TASK_ONLY if _task_only(tool) and not tasks else None,
        task=_task_only(tool),
        title=tool.title or (notes.title if notes is not None else None),
        icons=tuple(icon.model_dump(by_alias=True, exclude_none=True) for icon in tool.icons or ()),
    )


TASK_ONLY = (
    'it runs only as an MCP task (execution.taskSupport "required"), and Iris runs tasks only on the'
    " 2025-11-25 revision"
)


def _task_only(tool: mt.Tool) -> bool:
    """Whether it answers only as a task (SEP-1686): a plain ``tools/call`` of it is refused (-32601)."""
    return tool.execution is not None and tool.execution.task_support == "required"


@dataclass(frozen=True, slots=True)
class McpPromptArgument:
    """One argument a prompt takes (its value is a string)."""

    name: str
    description: str | None
    required: bool


@dataclass(frozen=True, slots=True)
class McpPrompt:
    """A prompt a server listed; runs and the API know it as ``{server}__{name}``."""

    server: str
    name: str
    title: str | None
    description: str | None
    arguments: tuple[McpPromptArgument, ...]

    @property
    def qualified_name(self) -> str:
        return f"{self.server}__{self.name}"


def listed_prompt(server: str, prompt: mt.Prompt) -> McpPrompt:
    return McpPrompt(
        server=server,
        name=prompt.name,
        title=prompt.title,
        description=prompt.description,
        arguments=tuple(
            McpPromptArgument(name=a.name, description=a.description, required=bool(a.required))
            for a in prompt.arguments or ()
        ),
    )


def prompt_text(result: mt.GetPromptResult) -> str:
    """A prompt's messages as the text of one user message: each message's text, an embedded text
    resource's text, and a note for any other block (images, audio, links are not taken)."""
    texts: list[str] = []
    for message in result.messages:
        block = message.content
        if isinstance(block, mt.TextContent):
            texts.append(block.text)
        elif isinstance(block, mt.EmbeddedResource) and isinstance(block.resource, mt.TextResourceContents):
            texts.append(block.resource.text)
        else:
            texts.append(f"[a {block.type} block of the prompt was left out]")
    return "\n\n".join(text for text in texts if text)
