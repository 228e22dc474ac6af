"""Keeping conversations: rename, pin and archive a session, switch its active line, search them all."""

from __future__ import annotations

from typing import Annotated

import msgspec

from iris.providers.wire import RequestStruct, WireStruct

Title = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class SessionUpdate(RequestStruct, kw_only=True):
    """``PATCH /api/agents/{slug}/sessions/{sessionId}``: only the fields present change. ``modelId`` (a
    model the agent offers, by id) is the model the chat continues with when a run names none."""

    title: Title | msgspec.UnsetType = msgspec.UNSET
    pinned: bool | msgspec.UnsetType = msgspec.UNSET
    archived: bool | msgspec.UnsetType = msgspec.UNSET
    model_id: str | msgspec.UnsetType = msgspec.UNSET


class ActiveMessageIn(RequestStruct, kw_only=True):
    """``POST …/sessions/{sessionId}/active``: show (and continue) the line through this message."""

    message_id: str


class ActiveLineOut(WireStruct, kw_only=True):
    """The session's active line now: ``leafId`` is its last message (the next one follows it)."""

    session_id: str
    message_id: str
    leaf_id: str


class SearchResult(WireStruct, omit_defaults=True, kw_only=True):
    """One hit: a message (``messageId``, to jump to) or a session's title (no ``messageId``).
    ``snippet`` is HTML: the text around the hit, escaped, with the matching words in ``<mark>``."""

    session_id: str
    agent_slug: str
    snippet: str
    title: str | None = None
    message_id: str | None = None


class SearchResults(WireStruct):
    """Best first."""

    results: list[SearchResult]
