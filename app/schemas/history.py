"""Thread history as ``GET /agent/threads/{threadId}/messages`` answers it (SPEC §7).

User content comes back as parts with freshly signed URLs (seed 000's ``binary`` blocks, or AG-UI 1.0
image, document and audio parts with ``?format=ag-ui``); assistant and tool messages carry their ``content``
and the structured output the event store validated.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

import msgspec

from iris.providers.wire import WireStruct


class TextPartOut(WireStruct, tag="text", tag_field="type"):
    text: str


class BinaryPartOut(WireStruct, tag="binary", tag_field="type"):
    """Seed 000's image block, with a URL that is fresh on every read."""

    mime_type: str
    url: str
    filename: str
    expires_at: dt.datetime


class UrlSourceOut(WireStruct):
    type: Literal["url"]
    value: str
    mime_type: str


class ImageMetadataOut(WireStruct, omit_defaults=True):
    """``estimatedTokens``: what the image costs the model of the run that sent it (vendor formula)."""

    filename: str
    expires_at: dt.datetime
    estimated_tokens: int | None = None


class ImagePartOut(WireStruct, tag="image", tag_field="type"):
    """AG-UI 1.0 image part (``?format=ag-ui``); the expiry rides in the part's open ``metadata``."""

    source: UrlSourceOut
    metadata: ImageMetadataOut


class DocumentMetadataOut(WireStruct, omit_defaults=True):
    """A PDF's name, URL expiry, page count and first-page thumbnail (a fresh signed URL too), and
    ``documentFallback`` when the model of the run that sent it got its text instead."""

    filename: str
    expires_at: dt.datetime
    pages: int | None = None
    thumbnail_url: str | None = None
    estimated_tokens: int | None = None
    document_fallback: dict[str, Any] | None = msgspec.field(default=None, name="iris/documentFallback")


class DocumentPartOut(WireStruct, tag="document", tag_field="type"):
    """AG-UI 1.0 document part (``?format=ag-ui``)."""

    source: UrlSourceOut
    metadata: DocumentMetadataOut


class AudioMetadataOut(WireStruct, omit_defaults=True):
    filename: str
    expires_at: dt.datetime
    duration_seconds: float | None = None
    estimated_tokens: int | None = None


class AudioPartOut(WireStruct, tag="audio", tag_field="type"):
    """AG-UI 1.0 audio part (``?format=ag-ui``)."""

    source: UrlSourceOut
    metadata: AudioMetadataOut


PartOut = TextPartOut | BinaryPartOut | ImagePartOut | DocumentPartOut | AudioPartOut


class FunctionCallOut(WireStruct):
    name: str
    arguments: str


class ToolCallOut(WireStruct, omit_defaults=True):
    """AG-UI ``ToolCall``: what an assistant message asked a tool to do (``encryptedValue``: the
    vendor's opaque reasoning artefact on it, a Gemini thought signature)."""

    id: str
    type: Literal["function"]
    function: FunctionCallOut
    encrypted_value: str | None = None


class HistoryMessage(WireStruct, omit_defaults=True, kw_only=True):
    """One message. Optional fields are absent when they do not apply (never ``null``); ``createdAt``
    is absent only with ``?format=ag-ui``, which keeps it in ``metadata["iris/createdAt"]``. With
    ``?format=ag-ui`` an assistant message's reasoning comes first as ``reasoning`` messages (AG-UI
    ``ReasoningMessage``: the text, and the vendor's opaque block as ``encryptedValue``). ``siblings``
    and ``siblingIndex`` (``metadata["iris/siblings"]``, ``metadata["iris/siblingIndex"]`` with
    ``?format=ag-ui``) are the ids of the message's versions, oldest first, and its place among them."""

    id: str
    role: str
    content: str | list[PartOut]
    created_at: dt.datetime | None = None
    tool_call_id: str | None = None
    tool_calls: list[ToolCallOut] | None = None
    metadata: dict[str, Any] | None = None
    encrypted_value: str | None = None
    superseded_at: dt.datetime | None = None
    siblings: list[str] | None = None
    sibling_index: int | None = None


class HistoryPage(WireStruct, omit_defaults=True, kw_only=True):
    """A page of a thread, oldest first; ``nextCursor`` (pass as ``?after=``) when there is more."""

    thread_id: str
    messages: list[HistoryMessage]
    next_cursor: str | None = None


class MessagesSnapshot(
    WireStruct, tag="MESSAGES_SNAPSHOT", tag_field="type", omit_defaults=True, kw_only=True
):
    """AG-UI ``MESSAGES_SNAPSHOT``: the conversation in one event, its messages as the history renders them
    with ``?format=ag-ui``. Not a run event, so never in a run's log: the re-attach stream sends it
    without an ``id:`` line (``?snapshot=messages``)."""

    messages: list[HistoryMessage]
    timestamp: int | None = None
