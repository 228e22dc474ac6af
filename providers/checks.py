"""Capability guards every built-in provider applies in ``build_request``, written once.

A part a model cannot take raises :class:`UnsupportedPartError`, with the same wording whatever the
vendor, so the core and the conformance test can rely on it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from iris.providers.errors import UnsupportedPartError
from iris.providers.messages import (
    AudioPart,
    DocumentPart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    ToolCallPart,
    ToolSpec,
)
from iris.providers.spec import Capabilities


def part_kind(part: Part) -> str:
    """The neutral part's type tag (``text``, ``image``, ``document``, ``audio``, ``tool_call``…)."""
    return str(type(part).__struct_config__.tag)


def check_image(part: ImagePart, caps: Capabilities, *, provider: str, model_id: str) -> None:
    """Raise unless this model takes this image in this delivery (URLs: https, where the vendor fetches)."""
    if not caps.vision:
        raise UnsupportedPartError(provider, "image", part.mime_type, f"{model_id} is text-only")
    if part.mime_type not in caps.image_mime_types:
        raise UnsupportedPartError(
            provider, "image", part.mime_type, f"{model_id} takes {', '.join(caps.image_mime_types)}"
        )
    if part.url is not None:
        if caps.url_fetch == "none":
            raise UnsupportedPartError(
                provider,
                "image",
                part.mime_type,
                f"{model_id} takes no external image URLs: its vendor cannot fetch image URLs, "
                "so send it no image URLs",
            )
        if not part.url.startswith("https://"):
            raise UnsupportedPartError(provider, "image", part.mime_type, "it only fetches https:// URLs")


def check_document(part: DocumentPart, caps: Capabilities, *, provider: str, model_id: str) -> None:
    """Raise unless this model reads this document natively (a PDF, within its page and byte caps)."""
    what = part.name or "a document"
    if part.mime_type != "application/pdf" or not caps.documents.pdf:
        raise UnsupportedPartError(provider, "document", part.mime_type, f"{model_id} reads no documents")
    if caps.documents.max_pages and part.pages > caps.documents.max_pages:
        raise UnsupportedPartError(
            provider,
            "document",
            part.mime_type,
            f"{what} has {part.pages} pages, {model_id} reads at most {caps.documents.max_pages}",
        )
    if caps.documents.max_bytes and len(part.data) > caps.documents.max_bytes:
        raise UnsupportedPartError(
            provider,
            "document",
            part.mime_type,
            f"{what} is over {model_id}'s {caps.documents.max_bytes} bytes",
        )


def check_audio(part: AudioPart, caps: Capabilities, *, provider: str, model_id: str) -> None:
    """Raise unless this model hears this audio natively (its format, within its seconds)."""
    if not caps.audio.supported:
        raise UnsupportedPartError(provider, "audio", part.mime_type, f"{model_id} hears no audio")
    if part.mime_type not in caps.audio.mime_types:
        raise UnsupportedPartError(
            provider, "audio", part.mime_type, f"{model_id} takes {', '.join(caps.audio.mime_types)}"
        )
    if caps.audio.max_seconds and part.seconds > caps.audio.max_seconds:
        raise UnsupportedPartError(
            provider, "audio", part.mime_type, f"{model_id} hears at most {caps.audio.max_seconds:g} seconds"
        )


def media_type(part: Part) -> str | None:
    """The MIME type of a media part (image, document, audio), ``None`` for any other."""
    return part.mime_type if isinstance(part, ImagePart | DocumentPart | AudioPart) else None


def check_tools(tools: Sequence[ToolSpec], caps: Capabilities, *, provider: str, model_id: str) -> None:
    """Tools offered to a model that cannot call them are an error, not something to drop quietly."""
    if tools and not caps.tools:
        raise UnsupportedPartError(provider, "tools", None, f"{model_id} does not call tools")


def tool_arguments(part: ToolCallPart, provider: str) -> dict[str, Any]:
    """A tool call's argument text as the JSON object vendors want; empty text means ``{}``."""
    try:
        value = json.loads(part.arguments) if part.arguments.strip() else {}
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise UnsupportedPartError(
            provider, "tool_call", None, f"arguments of {part.id} are not a JSON object"
        )
    return value


def own_reasoning(part: Part, provider: str) -> ReasoningPart | None:
    """A reasoning part this provider made (its signatures are valid only there), else ``None``: other
    vendors' reasoning is never sent, since their opaque blocks would be refused."""
    return part if isinstance(part, ReasoningPart) and part.provider == provider else None


def continued_turn(messages: Sequence[Message]) -> int | None:
    """The position of the assistant turn a tool-use continuation answers (only tool results follow
    it), whose reasoning must go back to the vendor; ``None`` when the request ends any other way."""
    position = len(messages) - 1
    while position >= 0 and messages[position].role == "tool":
        position -= 1
    if position == len(messages) - 1 or position < 0 or messages[position].role != "assistant":
        return None
    return position
