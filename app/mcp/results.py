"""What an MCP tool returns, as a :class:`tools.ToolResult`: every block kept (text, images, audio,
resource links, embedded resources), ``structuredContent`` and ``isError`` too."""

from __future__ import annotations

import base64
import binascii

import mcp_types as mt

from iris.tools import (
    AudioContent,
    ContentPart,
    ImageContent,
    ResourceContent,
    ResourceLinkContent,
    TextContent,
    ToolResult,
)

SUMMARY_CHARS = 200


def tool_result(result: mt.CallToolResult, tool: str) -> ToolResult:
    """The SDK's result as the core's; undecodable base64 becomes a text note, never a crash."""
    parts = [_part(block) for block in result.content]
    return ToolResult(
        summary=summary(parts, tool, is_error=result.is_error),
        content=tuple(parts),
        structured=result.structured_content,
        is_error=result.is_error,
    )


def _part(block: mt.ContentBlock) -> ContentPart:
    if isinstance(block, mt.TextContent):
        return TextContent(text=block.text)
    if isinstance(block, mt.ImageContent | mt.AudioContent):
        try:
            data = base64.b64decode(block.data, validate=True)
        except (binascii.Error, ValueError):
            return TextContent(text=f"[{block.type} that is not valid base64, dropped]")
        kind = ImageContent if isinstance(block, mt.ImageContent) else AudioContent
        return kind(data=data, mime_type=block.mime_type)
    if isinstance(block, mt.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mt.TextResourceContents):
            return ResourceContent(uri=str(resource.uri), mime_type=resource.mime_type, text=resource.text)
        try:
            blob = base64.b64decode(resource.blob, validate=True)
        except (binascii.Error, ValueError):
            return TextContent(text=f"[resource {resource.uri} that is not valid base64, dropped]")
        return ResourceContent(uri=str(resource.uri), mime_type=resource.mime_type, data=blob)
    return ResourceLinkContent(
        uri=str(block.uri),
        name=block.name,
        mime_type=block.mime_type,
        description=block.description,
        size=block.size,
    )


def summary(parts: list[ContentPart], tool: str, *, is_error: bool) -> str:
    """One line: the start of the first text, else what came back."""
    text = next((p.text for p in parts if isinstance(p, TextContent) and p.text.strip()), "")
    line = " ".join(text.split())
    if not line:
        kinds = [type(p).__name__.removesuffix("Content").lower() for p in parts]
        line = ", ".join(f"{kinds.count(k)} {k}" for k in dict.fromkeys(kinds)) or "no content"
    if len(line) > SUMMARY_CHARS:
        line = line[: SUMMARY_CHARS - 1].rstrip() + "…"
    return f"{tool} failed: {line}" if is_error else line
