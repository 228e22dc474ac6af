"""Documents (PDF) and audio in a thread: canonical parts, what the model is sent for each, and notices.

A stored part keeps the upload's facts (pages, seconds, where its page texts are), so every decision
here is made from data before any I/O. For the run's model each part is one of:

- ``native``: its bytes, as a :class:`~providers.DocumentPart` or :class:`~providers.AudioPart`;
- ``text`` (a document a model cannot read natively: Ollama, a text model, one over its page cap): its
  text page by page, each page labelled, as a text part;
- ``omitted`` (audio a model cannot hear): a one-line note. A new message with such audio is refused
  (422 ``unsupported_part``); an earlier one (the model changed mid-conversation) never fails the run:
  it is left out, and ``RUN_STARTED`` says so (``iris/attachmentNotices``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import msgspec

from app.errors import Unprocessable
from app.persistence.models import Message as MessageRow
from app.persistence.models import Upload
from app.runs.usage import attachment_estimate
from app.storage.base import Storage
from providers import AudioPart, Capabilities, DocumentPart, ModelSpec, TextPart
from providers.messages import Part

Delivery = Literal["native", "text", "omitted"]
NOTICES_KEY = "iris/attachmentNotices"
"""``RUN_STARTED`` metadata: the earlier attachments this run's model gets as text or not at all."""
FALLBACK_KEY = "iris/documentFallback"
"""On a stored document part: what a model that cannot read it natively was sent instead."""
KINDS = ("document", "audio")


def document_part(upload: Upload) -> dict[str, Any]:
    """The canonical part of a stored PDF."""
    return {
        "type": "document",
        "uploadId": str(upload.id),
        "bucket": upload.bucket,
        "path": upload.path,
        "mimeType": upload.mime_type,
        "name": upload.name,
        "size": upload.size,
        "sha256": upload.sha256,
        "pages": upload.pages or 0,
        "textPath": upload.text_path,
        "thumbnailPath": upload.thumbnail_path,
    }


def audio_part(upload: Upload) -> dict[str, Any]:
    """The canonical part of a stored audio clip."""
    return {
        "type": "audio",
        "uploadId": str(upload.id),
        "bucket": upload.bucket,
        "path": upload.path,
        "mimeType": upload.mime_type,
        "name": upload.name,
        "size": upload.size,
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


def mark_delivery(rows: Iterable[MessageRow], model: ModelSpec, caps: Capabilities) -> None:
    """Record on each new attachment what this run's model is sent: for a document sent as its text,
    ``iris/documentFallback``; for one sent natively, its token estimate (``tokenEstimate``)."""
    for row in rows:
        for part in attachment_parts(row.parts):
            how = delivery(part, caps)
            if part["type"] == "document" and how == "text":
                part[FALLBACK_KEY] = {"sent": "text", "pages": int(part.get("pages", 0))}
            elif how == "native" and (estimate := attachment_estimate(part, model.provider, model)):
                part["tokenEstimate"] = estimate


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
    history: Sequence[MessageRow], storage: Storage, caps: Capabilities, deleted: frozenset[str]
) -> dict[int, list[Part]]:
    """The parts the model gets for each stored attachment of the thread's user messages (by ``id`` of
    the stored part), read from storage now: bytes for native delivery, page texts for the fallback."""
    out: dict[int, list[Part]] = {}
    for row in history:
        if row.role != "user":
            continue
        for part in attachment_parts(row.parts):
            name = str(part.get("name") or "unnamed")
            if part.get("uploadId") in deleted:
                out[id(part)] = [TextPart(text=f"[{part['type']} deleted: {name}]")]
                continue
            how = delivery(part, caps)
            if how == "omitted":
                out[id(part)] = [TextPart(text=f"[audio left out: {name}; this model cannot hear it]")]
            elif how == "text":
                out[id(part)] = [TextPart(text=await _document_text(part, storage))]
            elif part["type"] == "document":
                data = await storage.read(str(part["path"]))
                pages = int(part.get("pages", 0))
                out[id(part)] = [
                    DocumentPart(mime_type=str(part["mimeType"]), data=data, name=name, pages=pages)
                ]
            else:
                data = await storage.read(str(part["path"]))
                seconds = float(part.get("durationSeconds", 0.0))
                out[id(part)] = [
                    AudioPart(mime_type=str(part["mimeType"]), data=data, name=name, seconds=seconds)
                ]
    return out


async def _document_text(part: Mapping[str, Any], storage: Storage) -> str:
    """The document's text, page by page and labelled, as a model without native PDF reading gets it."""
    name = str(part.get("name") or "document.pdf")
    texts: list[str] = []
    if part.get("textPath"):
        texts = msgspec.json.decode(await storage.read(str(part["textPath"])), type=list[str])
    pages = [
        f"[page {number}]\n{_lines(text)}" if text.strip() else f"[page {number}: no text (an image or scan)]"
        for number, text in enumerate(texts, start=1)
    ]
    header = f'[document "{name}", {len(texts)} page{"s" if len(texts) != 1 else ""}, sent as its text]'
    return "\n".join([header, *pages, f'[end of "{name}"]'])


def _lines(text: str) -> str:
    """A page's text with PDFium's ``\r\n`` line ends made ``\n``."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines())
