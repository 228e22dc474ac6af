"""Upload answers: the record, a signed URL, what Iris learned about the file, and parts ready to send
in either message shape."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from iris.providers.wire import WireStruct

UploadKind = Literal["image", "document", "audio"]


class AgUiUrlSource(WireStruct):
    type: Literal["url"]
    value: str
    mime_type: str


class AgUiMediaMetadata(WireStruct):
    filename: str


class AgUiMediaPart(WireStruct):
    """AG-UI 1.0 ``image``, ``document`` or ``audio`` input part, for ``POST /agent/runs``."""

    type: UploadKind
    source: AgUiUrlSource
    metadata: AgUiMediaMetadata


class ChatImagePart(WireStruct, tag_field="type", tag="image"):
    """Seed 002's image part, for ``POST /api/agents/{slug}/chat``."""

    image: str
    mime_type: str
    name: str


class ChatDocumentPart(WireStruct, tag_field="type", tag="document"):
    """The chat surface's PDF part."""

    document: str
    mime_type: str
    name: str


class ChatAudioPart(WireStruct, tag_field="type", tag="audio"):
    """The chat surface's audio part."""

    audio: str
    mime_type: str
    name: str


class ReadyParts(WireStruct):
    """The same file in both request shapes Iris accepts."""

    agui: AgUiMediaPart
    chat: ChatImagePart | ChatDocumentPart | ChatAudioPart


class UploadOut(WireStruct):
    """``POST /api/files``: an image (``width``/``height``), a PDF (``pages``, ``thumbnailUrl``) or audio
    (``durationSeconds``); the fields that do not apply are ``null`` (``width``/``height`` are 0)."""

    id: str
    thread_id: str
    kind: UploadKind
    bucket: str
    path: str
    mime_type: str
    name: str
    size: int
    width: int
    height: int
    pages: int | None
    duration_seconds: float | None
    thumbnail_url: str | None
    sha256: str
    created_at: dt.datetime
    url: str
    expires_at: dt.datetime
    parts: ReadyParts
