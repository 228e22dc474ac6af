"""What a tool returns: a one-line summary and any number of content parts.

The parts mirror what MCP tools return (text, images, audio, resource links, embedded resources),
plus ``JsonContent`` for structured data. Binary parts carry their bytes here; the core stores them
in the object store (never in the database) before anything is persisted or streamed.
"""

from __future__ import annotations

from typing import Any

import msgspec


class TextContent(msgspec.Struct, tag="text", tag_field="type", frozen=True, kw_only=True):
    text: str


class ImageContent(msgspec.Struct, tag="image", tag_field="type", frozen=True, kw_only=True):
    """Encoded image bytes (PNG, JPEG, WebP or GIF); the core checks the bytes, not the declared type."""

    data: bytes
    mime_type: str


class AudioContent(msgspec.Struct, tag="audio", tag_field="type", frozen=True, kw_only=True):
    data: bytes
    mime_type: str


class JsonContent(msgspec.Struct, tag="json", tag_field="type", frozen=True, kw_only=True):
    """Structured data for the model, as JSON."""

    value: Any


class ResourceLinkContent(msgspec.Struct, tag="resource_link", tag_field="type", frozen=True, kw_only=True):
    """A pointer to something the tool did not inline: Iris reads it only when asked, and only from
    the MCP server that returned it. ``size``: the bytes the tool says it has."""

    uri: str
    name: str
    mime_type: str | None = None
    description: str | None = None
    size: int | None = None


class ResourceContent(msgspec.Struct, tag="resource", tag_field="type", frozen=True, kw_only=True):
    """An embedded resource: its ``text``, or its bytes in ``data``."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    data: bytes | None = None


ContentPart = TextContent | ImageContent | AudioContent | JsonContent | ResourceLinkContent | ResourceContent


class ToolResult(msgspec.Struct, frozen=True, kw_only=True):
    """One call's answer. ``summary`` is one line (the tool message's content, what a person reads);
    ``content`` is what the model gets; ``structured`` is machine-readable data (MCP's
    ``structuredContent``), sent to the model as JSON when there is no content. ``is_error``: the tool
    ran but failed, and the content says why."""

    summary: str
    content: tuple[ContentPart, ...] = ()
    structured: Any = None
    is_error: bool = False
