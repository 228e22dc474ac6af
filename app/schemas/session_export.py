"""A session taken out of Iris (``GET …/export?format=json``) and brought back in (``POST …/import``):
its whole tree of messages, each with the id of the message it follows, and which line is active.

Images are the export's fresh signed URLs plus what identifies the upload (``uploadId``, ``sha256``);
an import copies the caller's own uploads into the new session, so the URLs may have expired by then.
Reasoning comes out as text only: a vendor's signatures are valid only in the run that made them.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Final, Literal

import msgspec

from iris.providers.wire import RequestStruct

EXPORT_FORMAT: Final = "iris.session"
EXPORT_VERSION: Final = 1

Instant = Annotated[dt.datetime, msgspec.Meta(tz=True)]
"""An RFC 3339 date-time with its offset, as exports write them (the document says ``date-time``)."""


class ExportTextPart(RequestStruct, tag="text", tag_field="type"):
    text: str


class ExportImagePart(RequestStruct, tag="image", tag_field="type", kw_only=True):
    """An image of a user message: a URL signed at export time (``expiresAt``) and the upload it is."""

    image: str
    mime_type: Literal["image/png", "image/jpeg", "image/webp"]
    name: str
    expires_at: Instant
    upload_id: str
    sha256: str
    size: int
    width: int
    height: int


class ExportReasoningPart(RequestStruct, tag="reasoning", tag_field="type"):
    """What the model thought before an answer (text only)."""

    text: str


ExportPart = ExportTextPart | ExportImagePart | ExportReasoningPart


class ExportToolCall(RequestStruct, kw_only=True):
    """A tool call an assistant message made."""

    id: str
    name: str
    arguments: str


class ExportToolAnswer(RequestStruct, omit_defaults=True, kw_only=True):
    """A frontend tool's answer, as the client sent it (``content`` is the answer's text)."""

    tool_call_id: str
    tool_name: str
    error: str | None = None


class ExportMessage(RequestStruct, omit_defaults=True, kw_only=True):
    """One message of the tree. ``parentId`` is the message it follows (absent for a first message);
    ``supersededAt`` says it is off the active line. An assistant message carries its ``toolCalls``
    and ``workerAgentOutput``; a tool message either ``toolAgentOutput`` (a server tool ran) or
    ``toolAnswer`` (a frontend tool's answer)."""

    id: str
    role: Literal["user", "assistant", "tool"]
    content: str
    created_at: Instant
    parts: list[ExportPart] = msgspec.field(default_factory=list)
    parent_id: str | None = None
    superseded_at: Instant | None = None
    tool_calls: list[ExportToolCall] | None = None
    worker_agent_output: dict[str, Any] | None = None
    tool_agent_output: dict[str, Any] | None = None
    tool_answer: ExportToolAnswer | None = None


class ExportSession(RequestStruct, omit_defaults=True, kw_only=True):
    id: str
    agent_slug: str
    created_at: Instant
    last_activity_at: Instant
    pinned: bool
    archived: bool
    title: str | None = None


class SessionExport(RequestStruct, omit_defaults=True, kw_only=True):
    """The whole session: ``messages`` in the order they were written (a parent before its replies),
    ``activeMessageId`` the end of the line that is shown and continued."""

    format: Literal["iris.session"]
    version: Annotated[int, msgspec.Meta(ge=EXPORT_VERSION, le=EXPORT_VERSION)]
    exported_at: Instant
    session: ExportSession
    messages: list[ExportMessage]
    active_message_id: str | None = None
