"""Images, PDFs and audio sent inline in a request and kept only for it (the OpenAI gateway's ``data:``
URL images, ``file`` and ``input_audio`` parts), checked exactly as an upload is, in the same bounded
decode slots; nothing is stored, and the pipeline reads the bytes from memory.

- Images: at most ``IRIS_MAX_IMAGE_BYTES``, the type sniffed from the bytes by Pillow (PNG, JPEG, WebP),
  fully decoded under the decompression-bomb limit.
- PDFs and audio: the kind sniffed from the bytes (a polyglot refused), the kind's byte limit, the PDF
  worker (page cap, encryption, bounded time and memory) or the audio parser (format and duration from
  the file's own structure); a PDF's page texts live as long as the request, for a model that reads it
  as text.

What a run's request carries inline is stored as an upload of its thread instead
(:mod:`iris.app.media.inline_uploads`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Literal

import anyio

from iris.app.errors import IrisError, Unprocessable, UnsupportedMediaType
from iris.app.media.audio import inspect_audio
from iris.app.media.base64_data import decode_base64
from iris.app.media.images import inspect_image
from iris.app.media.uploads import SNIFF_BYTES, inspect_bytes, sniff
from iris.app.settings import Settings

_DATA_URL = re.compile(r"^data:(?P<type>[^;,]*)(?P<params>(?:;[^;,]*)*),(?P<data>.*)$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class InlineImage:
    """A checked inline image: its original bytes and what Pillow found."""

    data: bytes
    mime_type: str
    width: int
    height: int
    sha256: str
    name: str


def decode_data_url(
    url: str, *, max_bytes: int, field: str, noun: str = "image", example: str = "data:image/png;base64,…"
) -> bytes:
    """The bytes of a base64 ``data:`` URL (its declared type is not trusted: the bytes are sniffed
    later); 413 ``file_too_large`` past ``max_bytes``, 422 ``invalid_data_url`` when it is not one."""
    match = _DATA_URL.match(url)
    if match is None or ";base64" not in match["params"].lower():
        raise Unprocessable(
            f"An inline {noun} must be a base64 data URL ({example}).", code="invalid_data_url", field=field
        )
    return decode_base64(
        match["data"], max_bytes=max_bytes, field=field, noun=noun, invalid_code="invalid_data_url"
    )


async def inspect_inline(
    data: bytes, *, name: str, max_pixels: int, limiter: anyio.CapacityLimiter, field: str
) -> InlineImage:
    """Sniff and decode ``data`` as an upload's bytes are (415 / 422 naming ``field``)."""
    try:
        info = await anyio.to_thread.run_sync(
            lambda: inspect_image(data, max_pixels=max_pixels), limiter=limiter
        )
    except IrisError as exc:
        exc.field = field
        raise
    if info.repaired is not None:  # a PNG without its damaged optional chunks
        data = info.repaired
    return InlineImage(
        data=data,
        mime_type=info.mime_type,
        width=info.width,
        height=info.height,
        sha256=hashlib.sha256(data).hexdigest(),
        name=name or f"image.{info.extension}",
    )


@dataclass(frozen=True, slots=True)
class InlineDocument:
    """A checked inline PDF: its bytes, page count and page texts (``""`` for a page without text)."""

    data: bytes
    sha256: str
    name: str
    pages: int
    page_texts: tuple[str, ...]

    def part(self) -> dict[str, Any]:
        """The document as a request's message part carries it: held in memory, stored nowhere."""
        return {
            "type": "document",
            "path": "",
            "mimeType": "application/pdf",
            "name": self.name,
            "size": len(self.data),
            "sha256": self.sha256,
            "pages": self.pages,
            "textPath": None,
            "thumbnailPath": None,
            "data": self.data,
            "pageTexts": list(self.page_texts),
        }


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
