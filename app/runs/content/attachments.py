"""Documents (PDF) and audio in a thread: canonical parts, what the model is sent for each, and notices.

A stored part keeps the upload's facts (pages, seconds, where its page texts are), so every decision
here is made from data before any I/O. For the run's model each part is one of:

- ``native``: its bytes, as a :class:`~providers.DocumentPart` or :class:`~providers.AudioPart`;
- ``text`` (a document a model cannot read natively: Ollama, a text model, one over its page cap): its
  text page by page, each page labelled, as a text part; for a vision model, its pages without text (a
  scan) also as rendered page images, within the model's image count and bytes (``text+images``);
- ``omitted`` (audio a model cannot hear): a one-line note. A new message with such audio is refused
  (422 ``unsupported_part``); an earlier one (the model changed mid-conversation) never fails the run:
  it is left out, and ``RUN_STARTED`` says so (``iris/attachmentNotices``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from iris.app.errors import IrisError, Unprocessable
from iris.app.media.documents import DEFAULT_WORKER_MEMORY_BYTES
from iris.app.media.page_images import page_pngs
from iris.app.persistence.models import Message as MessageRow
from iris.app.persistence.models import Upload
from iris.app.runs.content.usage import attachment_estimate
from iris.app.storage.base import Storage
from iris.providers import AudioPart, Capabilities, DocumentPart, ImagePart, ModelSpec, Provider, TextPart
from iris.providers.messages import Part

Delivery = Literal["native", "text", "omitted"]
NOTICES_KEY = "iris/attachmentNotices"
"""``RUN_STARTED`` metadata: the earlier attachments this run's model gets as text or not at all."""
FALLBACK_KEY = "iris/documentFallback"
"""On a stored document part: what a model that cannot read it natively was sent instead."""
KINDS = ("document", "audio")
PAGE_IMAGE_EDGE_PX = 1568
"""The longest edge of a rendered page (a letter page at ~190 dpi, legible; what Anthropic and OpenAI
read at full detail without scaling), or the model's own edge limit when smaller."""


@dataclass(frozen=True, slots=True)
class PageRendering:
    """The PDF worker's bounds when the fallback renders scanned pages: uploads' settings
    (``IRIS_PDF_TIMEOUT_SECONDS``, ``IRIS_PDF_WORKER_MEMORY_BYTES``). A page that does not render
    within them is told as "no text" instead; it never fails the run."""

    timeout_seconds: float = 20.0
    memory_bytes: int = DEFAULT_WORKER_MEMORY_BYTES


DEFAULT_PAGE_RENDERING = PageRendering()


def stored_fields(kind: str, upload: Upload) -> dict[str, Any]:
    """The fields every canonical attachment part starts with, in this order (stored JSON keeps it):
    its kind and where the upload is, its type, name and size."""
    return {
        "type": kind,
        "uploadId": str(upload.id),
        "bucket": upload.bucket,
        "path": upload.path,
        "mimeType": upload.mime_type,
        "name": upload.name,
        "size": upload.size,
    }


def deleted_note(part: Mapping[str, Any]) -> str:
    """What stands in for an image, document or audio clip whose upload was deleted (``delete_attachment``,
    or a tool plugin's ``delete_upload``)."""
    return f"[{part.get('type', 'image')} deleted: {part.get('name') or 'unnamed'}]"


def document_part(upload: Upload) -> dict[str, Any]:
    """The canonical part of a stored PDF."""
    return {
        **stored_fields("document", upload),
        "sha256": upload.sha256,
        "pages": upload.pages or 0,
        "textPath": upload.text_path,
        "thumbnailPath": upload.thumbnail_path,
    }


def audio_part(upload: Upload) -> dict[str, Any]:
    """The canonical part of a stored audio clip."""
    return {
        **stored_fields("audio", upload),
        "sha256": upload.sha256,
        "durationSeconds": upload.duration_seconds or 0.0,
    }


def attachment_parts(parts: Sequence[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The document and audio parts of a stored message."""
    return [p for p in parts or () if p.get("type") in KINDS]


def delivery(part: Mapping[str, Any], caps: Capabilities) -> Delivery:
    """How this model gets this stored part (data only: its facts against the model's capabilities)."""
    if part.get("type") == "document":
        docs = caps.documents
        fits = (not docs.max_pages or int(part.get("pages", 0)) <= docs.max_pages) and (
            not docs.max_bytes or int(part.get("size", 0)) <= docs.max_bytes
        )
        return "native" if docs.pdf and part.get("mimeType") == "application/pdf" and fits else "text"
    audio = caps.audio
    hears = part.get("mimeType") in audio.mime_types and (
        not audio.max_seconds or float(part.get("durationSeconds", 0.0)) <= audio.max_seconds
    )
    return "native" if hears else "omitted"


def native_bytes(history: Sequence[MessageRow], caps: Capabilities) -> int:
    """The base64 bytes of the documents and audio of ``history`` that this model gets natively: sent
    whole (unlike images, they cannot be made smaller), they come out of its request budget first."""
    return sum(
        4 * -(-int(part.get("size", 0)) // 3)
        for row in history
        for part in attachment_parts(row.parts)
        if delivery(part, caps) == "native"
    )


def check_new_attachments(rows: Iterable[MessageRow], caps: Capabilities, *, model_ref: str) -> None:
    """422 ``unsupported_part`` before anything is stored when a new message carries audio this model
    cannot hear (documents always go: natively, or as their text)."""
    for row in rows:
        for part in attachment_parts(row.parts):
            if part["type"] == "audio" and delivery(part, caps) == "omitted":
                heard = ", ".join(caps.audio.mime_types) or "no audio"
                raise Unprocessable(
                    f"{model_ref} cannot take the audio part {part.get('name') or 'unnamed'!r}"
                    f" ({part['mimeType']}, {float(part.get('durationSeconds', 0)):g} s); it hears {heard}."
                    " Pick a model that hears audio, or remove it.",
                    code="unsupported_part",
                    extra={"part": "audio", "model": model_ref},
                )


async def mark_delivery(
    rows: Sequence[MessageRow],
    model: ModelSpec,
    caps: Capabilities,
    storage: Storage,
    *,
    request_room: int,
    provider: Provider,
) -> None:
    """Record on each new attachment what this run's model is sent: for a document sent as its text,
    ``iris/documentFallback`` (``text``, or ``text+images`` with the ``imagePages`` a vision model sees
    rendered, as :func:`model_attachments` picks them); for one sent natively, its token estimate
    (``tokenEstimate``, by ``provider``'s declared figures). ``request_room``: the images the request has
    room for beside the stored ones."""
    for row in reversed(rows):
        room = min(image_room(row, caps), request_room)
        for part in attachment_parts(row.parts):
            how = delivery(part, caps)
            if part["type"] == "document" and how == "text":
                pages = image_pages(await page_texts(part, storage), caps, room) if room else []
                room -= len(pages)
                request_room -= len(pages)
                fallback: dict[str, Any] = {"sent": "text", "pages": int(part.get("pages", 0))}
                if pages:
                    fallback |= {"sent": "text+images", "imagePages": pages}
                part[FALLBACK_KEY] = fallback
            elif how == "native" and (estimate := attachment_estimate(part, provider, model)):
                part["tokenEstimate"] = estimate


def image_room(row: MessageRow, caps: Capabilities) -> int:
    """How many rendered pages a message's documents may add: the model's image count less the
    message's own images (0 for a model that does not see, or does not take PNG)."""
    if not caps.vision or "image/png" not in caps.image_mime_types:
        return 0
    images = sum(1 for p in row.parts or () if p.get("type") == "image")
    return max(caps.max_images - images, 0)


def image_pages(texts: Sequence[str], caps: Capabilities, room: int) -> list[int]:
    """The pages (1-based) without text that a vision model gets rendered: the first ``room``."""
    if room <= 0 or not caps.vision:
        return []
    return [number for number, text in enumerate(texts, start=1) if not text.strip()][:room]


async def page_texts(part: Mapping[str, Any], storage: Storage) -> list[str]:
    """A document's page texts (``""`` for a page without text): stored beside it, or carried by a
    part sent inline (the OpenAI gateway's ``file``)."""
    if "pageTexts" in part:
        return list(part["pageTexts"])
    if not part.get("textPath"):
        return []
    return msgspec.json.decode(await storage.read(str(part["textPath"])), type=list[str])


async def attachment_bytes(part: Mapping[str, Any], storage: Storage) -> bytes:
    """A document's or clip's bytes: read from storage, or those of a part sent inline (never stored)."""
    data = part.get("data")
    return data if isinstance(data, bytes) else await storage.read(str(part["path"]))


def notices(history: Sequence[MessageRow], caps: Capabilities, *, model_ref: str) -> list[dict[str, Any]]:
    """What this run's model gets instead of the thread's attachments it cannot take (a changed model
    must never fail on history): ``{name, type, sent: "text" | "omitted", reason}`` each."""
    out: list[dict[str, Any]] = []
    for row in history:
        if row.role != "user":
            continue
        for part in attachment_parts(row.parts):
            how = delivery(part, caps)
            if how == "native":
                continue
            reason = (
                f"{model_ref} does not read this PDF natively"
                if part["type"] == "document"
                else f"{model_ref} cannot hear this audio"
            )
            out.append({"name": part.get("name", ""), "type": part["type"], "sent": how, "reason": reason})
    return out


async def model_attachments(
    history: Sequence[MessageRow],
    storage: Storage,
    caps: Capabilities,
    deleted: frozenset[str],
    rendering: PageRendering,
    *,
    request_room: int,
) -> dict[int, list[Part]]:
    """The parts the model gets for each stored attachment of the thread's user messages (by ``id`` of
    the stored part), read from storage now: bytes for native delivery, page texts for the fallback
    (with the pages without text rendered, for a vision model: within each message's room and the
    request's ``request_room`` beside its stored images, newest message first)."""
    out: dict[int, list[Part]] = {}
    for row in reversed(history):
        if row.role != "user":
            continue
        room = min(image_room(row, caps), request_room)
        for part in attachment_parts(row.parts):
            name = str(part.get("name") or "unnamed")
            if part.get("uploadId") in deleted:
                out[id(part)] = [TextPart(text=deleted_note(part))]
                continue
            how = delivery(part, caps)
            if how == "omitted":
                out[id(part)] = [TextPart(text=f"[audio left out: {name}; this model cannot hear it]")]
            elif how == "text":
                texts = await page_texts(part, storage)
                images = await _page_images(part, storage, caps, image_pages(texts, caps, room), rendering)
                room -= len(images)
                request_room -= len(images)
                out[id(part)] = [TextPart(text=_document_text(part, texts, images)), *images.values()]
            elif part["type"] == "document":
                data = await attachment_bytes(part, storage)
                pages = int(part.get("pages", 0))
                out[id(part)] = [
                    DocumentPart(mime_type=str(part["mimeType"]), data=data, name=name, pages=pages)
                ]
            else:
                data = await attachment_bytes(part, storage)
                seconds = float(part.get("durationSeconds", 0.0))
                out[id(part)] = [
                    AudioPart(mime_type=str(part["mimeType"]), data=data, name=name, seconds=seconds)
                ]
    return out


async def _page_images(
    part: Mapping[str, Any],
    storage: Storage,
    caps: Capabilities,
    pages: Sequence[int],
    rendering: PageRendering,
) -> dict[int, ImagePart]:
    """``pages`` (1-based) of the PDF as PNG parts, each within the model's edge and bytes, rendered once
    per stored document and size (:mod:`iris.app.media.page_images`); a page that does not render (or is
    too big) is left out, and told as "no text" (history never fails a run)."""
    if not pages:
        return {}
    edge = min(PAGE_IMAGE_EDGE_PX, caps.max_image_edge_px or PAGE_IMAGE_EDGE_PX)
    try:
        rendered = await page_pngs(
            storage,
            "" if isinstance(part.get("data"), bytes) else str(part["path"]),
            lambda: attachment_bytes(part, storage),
            pages,
            edge_px=edge,
            timeout=rendering.timeout_seconds,
            memory_bytes=rendering.memory_bytes,
        )
    except IrisError:
        return {}
    name = str(part.get("name") or "document.pdf")
    out: dict[int, ImagePart] = {}
    for number, png in rendered.items():
        if caps.max_image_bytes and len(png) > caps.max_image_bytes:
            continue
        width, height = struct.unpack(">II", png[16:24])  # the PNG's IHDR
        out[number] = ImagePart(
            mime_type="image/png", width=width, height=height, data=png, name=f"{name}, page {number}"
        )
    return out


def _document_text(part: Mapping[str, Any], texts: Sequence[str], images: Mapping[int, ImagePart]) -> str:
    """The document's text, page by page and labelled, as a model without native PDF reading gets it;
    a page sent as an image says so (the images follow the text, in page order)."""
    name = str(part.get("name") or "document.pdf")

    def page(number: int, text: str) -> str:
        if text.strip():
            return f"[page {number}]\n{_lines(text)}"
        if number in images:
            return f"[page {number}: no text; sent as an image after this text]"
        return f"[page {number}: no text (an image or scan)]"

    pages = [page(number, text) for number, text in enumerate(texts, start=1)]
    header = f'[document "{name}", {len(texts)} page{"s" if len(texts) != 1 else ""}, sent as its text]'
    return "\n".join([header, *pages, f'[end of "{name}"]'])


def _lines(text: str) -> str:
    """A page's text with PDFium's ``\r\n`` line ends made ``\n``."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines())
