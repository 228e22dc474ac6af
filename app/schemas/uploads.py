"""Upload answers: the record, a signed URL, and parts ready to send in either message shape."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from providers.wire import WireStruct


class AgUiUrlSource(WireStruct):
    type: Literal["url"]
    value: str
    mime_type: str


class AgUiImageMetadata(WireStruct):
    filename: str


class AgUiImagePart(WireStruct):
    """AG-UI 1.0 ``InputContent`` image part, for ``POST /agent/runs``."""

    type: Literal["image"]
    source: AgUiUrlSource
    metadata: AgUiImageMetadata


class ChatImagePart(WireStruct):
    """Seed 002's image part, for ``POST /api/agents/{slug}/chat``."""

    type: Literal["image"]
    image: str
    mime_type: str
    name: str


class ReadyParts(WireStruct):
    """The same image in both request shapes Iris accepts."""

    agui: AgUiImagePart
    chat: ChatImagePart


class UploadOut(WireStruct):
    """``POST /api/files``."""

    id: str
    thread_id: str
    bucket: str
    path: str
    mime_type: str
    name: str
    size: int
    width: int
    height: int
    sha256: str
    created_at: dt.datetime
    url: str
    expires_at: dt.datetime
    parts: ReadyParts
