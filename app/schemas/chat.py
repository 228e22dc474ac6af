"""The chat surface's bodies and answers (seed 002): what the web frontend sends and reads."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

import msgspec

from iris.app.agui.events import TokenUsage
from iris.app.agui.input import ResumeEntryIn
from iris.app.schemas.agents import AgentRef
from iris.app.schemas.history import TextPartOut
from iris.providers.wire import RequestStruct, WireStruct


class PromptIn(RequestStruct, kw_only=True):
    """One of the agent's MCP prompts: ``{server}__{prompt}`` and its (string) arguments."""

    name: str
    arguments: dict[str, str] = msgspec.field(default_factory=dict)


class ChatRequest(RequestStruct, kw_only=True):
    """``POST /api/agents/{slug}/chat``. ``content`` (a string) is what old clients send instead of
    ``parts``; ``enableThinking`` asks for the model's reasoning (a model that cannot reason ignores it).
    ``resume`` answers the session's open approval interrupts, as on ``/agent/runs/resume`` (one entry
    per interrupt: ``resolved`` runs the tool, ``cancelled`` skips it); it needs no new message.
    ``prompt`` starts from one of the agent's MCP prompts (``GET /api/agents/{slug}/prompts``): its
    messages become the user's message (after ``content``, when both are given)."""

    session_id: str | None = None
    parts: list[dict[str, Any]] | None = None
    content: str | None = None
    model_id: str | None = None
    enable_thinking: bool | None = None
    enable_tools: bool | None = None
    edit_message_id: str | None = None
    regenerate: bool = False
    resume: list[ResumeEntryIn] | None = None
    prompt: PromptIn | None = None


class SessionOut(WireStruct, omit_defaults=True, kw_only=True):
    id: str
    created_at: dt.datetime
    last_activity_at: dt.datetime
    pinned: bool
    archived: bool
    title: str | None = None
    model_id: str | None = None


class SessionList(WireStruct, omit_defaults=True):
    """A page of sessions, pinned first, then the most recently active; ``nextOffset`` (pass it as
    ``?offset=``) when there are more."""

    sessions: list[SessionOut]
    next_offset: int | None = None


class ImagePartOut(WireStruct, tag="image", tag_field="type"):
    """Seed 002's image part, with a URL signed for this read and when it expires."""

    image: str
    mime_type: str
    name: str
    expires_at: dt.datetime


class DocumentPartOut(WireStruct, tag="document", tag_field="type", omit_defaults=True, kw_only=True):
    """A PDF the user sent: a URL signed for this read, its page count and first-page thumbnail, and
    ``documentFallback`` when the model of that run got its text instead."""

    document: str
    mime_type: str
    name: str
    expires_at: dt.datetime
    pages: int | None = None
    thumbnail_url: str | None = None
    document_fallback: dict[str, Any] | None = msgspec.field(default=None, name="iris/documentFallback")


class AudioPartOut(WireStruct, tag="audio", tag_field="type", omit_defaults=True, kw_only=True):
    """An audio clip the user sent: a URL signed for this read, and its duration."""

    audio: str
    mime_type: str
    name: str
    expires_at: dt.datetime
    duration_seconds: float | None = None


class ReasoningPartOut(WireStruct, tag="reasoning", tag_field="type", omit_defaults=True):
    """What the model thought before an answer; ``redacted`` when the vendor hid it (no text then)."""

    text: str
    redacted: bool = False


class ChatToolCallOut(WireStruct):
    """A tool call an assistant message made: the tool's name and the model's JSON arguments."""

    id: str
    name: str
    arguments: str


class ChatMessageOut(WireStruct, omit_defaults=True, kw_only=True):
    """One message; an answer names the agent version that gave it (``agent``). ``siblings`` are the ids
    of its versions (edits of a user message, regenerated answers), oldest first, itself included;
    ``siblingIndex`` is its place among them (switch with ``POST …/sessions/{sessionId}/active``).
    Assistant messages carry the ``toolCalls`` they made and their ``usage``
    (``WorkerAgentOutput.usage``); tool messages the call they answer (``toolCallId``), the images the
    tool returned among their ``parts``, and the whole ``toolOutput`` (``ToolAgentOutput``, each stored
    media part with a fresh ``url``)."""

    id: str
    role: Literal["user", "assistant", "tool", "system"]
    content: str
    parts: list[TextPartOut | ImagePartOut | DocumentPartOut | AudioPartOut | ReasoningPartOut]
    created_at: dt.datetime
    siblings: list[str]
    sibling_index: int
    superseded_at: dt.datetime | None = None
    agent: AgentRef | None = None
    tool_calls: list[ChatToolCallOut] | None = None
    usage: dict[str, Any] | None = None
    tool_call_id: str | None = None
    tool_output: dict[str, Any] | None = None


class ChatHistory(WireStruct):
    """A session's messages, with its title and the model it continues with (``modelId``: a catalogue
    id, absent before its first run), so a page reopening it shows both."""

    session_id: str
    messages: list[ChatMessageOut]
    title: str | None = None
    model_id: str | None = None


class LlmMessageIn(RequestStruct, kw_only=True):
    role: Literal["user", "assistant", "system"]
    content: str | list[dict[str, Any]]


class LlmChatRequest(RequestStruct, kw_only=True):
    """``POST /api/llm/chat`` (seed 002 §4.4): one model, earlier ``messages`` from the client, nothing
    stored. ``parts`` (or old clients' ``content``) is the new user message."""

    model_id: str
    parts: list[dict[str, Any]] | None = None
    content: str | None = None
    messages: list[LlmMessageIn] | None = None
    stream: bool = True


class LlmChatAnswer(WireStruct, omit_defaults=True, kw_only=True):
    """The non-streaming answer."""

    content: str
    usage: TokenUsage | None = None
