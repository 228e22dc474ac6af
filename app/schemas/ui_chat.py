"""The AI SDK's ``useChat`` bodies and answers (UI message stream protocol v1): what its
``DefaultChatTransport`` sends, and the ``UIMessage[]`` the history endpoint gives back."""

from __future__ import annotations

from typing import Any, Literal

from iris.providers.wire import RequestStruct, WireStruct


class UiChatRequest(RequestStruct, kw_only=True):
    """``POST /api/agents/{slug}/ui-chat``: ``DefaultChatTransport``'s body. ``id`` is the chat (Iris's
    session, created on first use); only the last of ``messages`` is read (Iris keeps the history): a
    user message to answer, or the assistant message whose tool parts carry approval answers
    (``approval-responded``). ``trigger: "regenerate-message"`` answers the last user message again (a
    sibling branch). ``modelId``, ``enableThinking`` and ``enableTools`` come from the transport's
    ``body`` option, as on the chat surface."""

    id: str
    messages: list[dict[str, Any]]
    trigger: Literal["submit-message", "regenerate-message"] = "submit-message"
    message_id: str | None = None
    model_id: str | None = None
    enable_thinking: bool | None = None
    enable_tools: bool | None = None


class UiMessageOut(WireStruct, omit_defaults=True, kw_only=True):
    """One ``UIMessage``: a user message (``text`` and ``file`` parts with fresh signed URLs) or an
    answer (``step-start``, ``reasoning``, ``text``, ``dynamic-tool`` and ``file`` parts, its usage in
    ``metadata``). An answer's id is the id of the run that began it, as its stream's ``start`` said."""

    id: str
    role: Literal["user", "assistant", "system"]
    parts: list[dict[str, Any]]
    metadata: dict[str, Any] | None = None
