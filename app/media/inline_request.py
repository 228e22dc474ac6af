"""PDFs and audio sent inline in a request (the OpenAI gateway's ``file`` and ``input_audio`` parts),
checked exactly as an upload is: the kind sniffed from the bytes (a polyglot refused), the kind's byte
limit, the PDF worker (page cap, encryption, bounded time and memory) or the audio parser (format and
duration from the file's own structure), in the same bounded decode slots. Nothing is stored: the
bytes, and a PDF's page texts for a model that reads it as text, live as long as the request.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

import anyio

from app.errors import IrisError, UnsupportedMediaType
from app.media.audio import inspect_audio
from app.media.uploads import SNIFF_BYTES, inspect_bytes, sniff
from app.settings import Settings


@dataclass(frozen=True, slots=True)
class InlineDocument:
    """A checked inline PDF: its bytes, page count and page texts (``""`` for a page without text)."""

    data: bytes
    sha256: str
    name: str
    pages: int
    page_texts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class InlineAudio:
    """A checked inline audio clip: its bytes and what the parser found."""

    data: bytes
    sha256: str
    name: str
    mime_type: str
    format: Literal["wav", "mp3"]
    duration_seconds: float


def _sniffed(data: bytes, wanted: Literal["document", "audio"], field: str) -> None:
    """415 ``unsupported_media_type`` unless the bytes are of the ``wanted`` kind (a polyglot never is)."""
    try:
        found = sniff(data[:SNIFF_BYTES])
    except IrisError as exc:
        exc.field = field
        raise
    if found != wanted:
        expected = "a PDF" if wanted == "document" else "WAV or MP3 audio"
        raise UnsupportedMediaType(
            f"This part takes {expected}; its bytes are not.",
            code="unsupported_media_type",
            field=field,
            extra={"found": found},
        )


async def inspect_inline_pdf(
    data: bytes, *, name: str, settings: Settings, limiter: anyio.CapacityLimiter, field: str
) -> InlineDocument:
    """``data`` checked as an uploaded PDF is (errors name ``field``); no thumbnail is made."""
    _sniffed(data, "document", field)
    try:
        pdf = (await inspect_bytes(data, "document", settings, limiter, thumbnail_edge_px=0)).pdf
    except IrisError as exc:
        exc.field = field
        raise
    assert pdf is not None  # inspect_bytes always reads a document's facts
    return InlineDocument(
        data=data,
        sha256=hashlib.sha256(data).hexdigest(),
        name=name or "document.pdf",
        pages=pdf.pages,
        page_texts=pdf.page_texts,
    )


async def inspect_inline_audio(
    data: bytes,
    *,
    declared: Literal["wav", "mp3"],
    settings: Settings,
    limiter: anyio.CapacityLimiter,
    field: str,
) -> InlineAudio:
    """``data`` checked as uploaded audio is; the ``declared`` format must be the one the bytes are
    (415 ``unsupported_media_type`` when it is not)."""
    _sniffed(data, "audio", field)
    try:
        facts = await anyio.to_thread.run_sync(
            lambda: inspect_audio(data, max_seconds=settings.max_audio_seconds), limiter=limiter
        )
    except IrisError as exc:
        exc.field = field
        raise
    if facts.format != declared:
        raise UnsupportedMediaType(
            f"The audio is declared {declared!r} but its bytes are {facts.format.upper()}.",
            code="unsupported_media_type",
            field=field,
            extra={"found": facts.format},
        )
    return InlineAudio(
        data=data,
        sha256=hashlib.sha256(data).hexdigest(),
        name=f"audio.{facts.format}",
        mime_type=facts.mime_type,
        format=facts.format,
        duration_seconds=round(facts.duration_seconds, 3),
    )
