"""Receiving an upload (an image, a PDF or audio): stream, sniff, check, store, record — and leave nothing
behind on failure.

The kind is decided from the bytes alone: ``%PDF-`` at the start is a PDF, a RIFF/WAVE or MPEG audio
header is audio, anything else goes to Pillow. Each kind has its own byte limit; a PDF leaves a
first-page thumbnail and its page texts beside it (:func:`derived_paths`)."""

from __future__ import annotations

import hashlib
import json
import logging
import unicodedata
import uuid
from collections.abc import AsyncIterable
from pathlib import PurePosixPath, PureWindowsPath
from typing import Literal

import anyio
import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.agui.capabilities import UploadLimits
from iris.app.errors import NotFound, PayloadTooLarge, Unprocessable, UnsupportedMediaType
from iris.app.media.audio import AudioFacts, inspect_audio, sniff_audio
from iris.app.media.documents import THUMBNAIL_EDGE_PX, PdfFacts, inspect_pdf
from iris.app.media.images import ImageInfo, inspect_image
from iris.app.media.multipart import SpooledFile, read_upload_form
from iris.app.mime import UPLOAD_EXTENSION_BY_MIME
from iris.app.persistence.models import Upload
from iris.app.persistence.repositories import SessionRepository, UploadRepository
from iris.app.schemas.uploads import (
    AgUiMediaMetadata,
    AgUiMediaPart,
    AgUiUrlSource,
    ChatAudioPart,
    ChatDocumentPart,
    ChatImagePart,
    ReadyParts,
    UploadKind,
    UploadOut,
)
from iris.app.security.auth import Principal
from iris.app.security.quotas import admit_upload
from iris.app.settings import Settings
from iris.app.storage.base import SignedUrl, Storage, StorageError
from iris.app.threads import check_thread_id, thread_segment

log = logging.getLogger("iris.media")

# Multipart framing (boundaries, part headers, the threadId field) on top of the file itself.
FORM_OVERHEAD_BYTES = 64 * 1024
# Decoding is CPU- and memory-heavy: at most this many at once per process, whatever the load.
DECODE_SLOTS = 2
SNIFF_BYTES = 1024
"""How far in a PDF reader looks for ``%PDF-``: a file of another kind with it there is refused."""


def upload_path(user_id: str, thread_id: str, extension: str) -> str:
    """``agent-inputs/{userId}/{threadSegment}/uploads/{uuid}.{ext}`` — the layout the URL policy expects
    (the thread's segment is :func:`iris.app.threads.thread_segment`)."""
    return f"agent-inputs/{user_id}/{thread_segment(thread_id)}/uploads/{uuid.uuid4()}.{extension}"


def derived_base(path: str) -> str:
    """``derived/documents/{uuid}``: where what Iris derives from a PDF upload lives, outside
    ``agent-inputs/``, so no inbound URL can name it."""
    return f"derived/documents/{PurePosixPath(path).stem}"


def derived_paths(path: str) -> tuple[str, str]:
    """Where a PDF upload's first-page thumbnail and its page texts (a JSON array of strings) live
    (under :func:`derived_base`)."""
    base = derived_base(path)
    return f"{base}/thumbnail.png", f"{base}/pages.json"


async def read_page_texts(storage: Storage, upload: Upload) -> tuple[str, ...]:
    """A PDF upload's page texts, in page order (``""`` for a page without text); ``()`` for uploads
    that are not PDFs. Raises :class:`iris.app.storage.base.ObjectNotFound` when the object is gone."""
    if upload.text_path is None:
        return ()
    return tuple(msgspec.json.decode(await storage.read(upload.text_path), type=list[str]))


def upload_kind(mime_type: str) -> UploadKind:
    if mime_type == "application/pdf":
        return "document"
    return "audio" if mime_type.startswith("audio/") else "image"


def clean_filename(raw: str, extension: str) -> str:
    """The client's file name without directories or control characters, at most 255 characters."""
    name = PureWindowsPath(PurePosixPath(raw).name).name
    name = "".join(c for c in unicodedata.normalize("NFC", name) if unicodedata.category(c)[0] != "C").strip()
    fallback = {"pdf": "document", "wav": "audio", "mp3": "audio"}.get(extension, "image")
    return name[:255] or f"{fallback}.{extension}"


def largest_upload(settings: Settings) -> int:
    """The largest file of any kind: what the stream is cut at before the kind is known."""
    return max(settings.max_image_bytes, settings.max_document_bytes, settings.max_audio_bytes)


def upload_limits(settings: Settings) -> UploadLimits:
    """The limits a client shows before it uploads (``/agent/capabilities``)."""
    return UploadLimits(
        accepted_types=list(UPLOAD_EXTENSION_BY_MIME),
        max_image_bytes=settings.max_image_bytes,
        max_images_per_message=settings.max_images_per_message,
        max_documents_per_message=settings.max_documents_per_message,
        max_audio_per_message=settings.max_audio_per_message,
        max_document_bytes=settings.max_document_bytes,
        max_document_pages=settings.max_document_pages,
        max_audio_bytes=settings.max_audio_bytes,
        max_audio_seconds=settings.max_audio_seconds,
    )


def check_content_length(header: str | None, max_file_bytes: int) -> None:
    """Refuse up front when the declared body is already too big for any valid upload."""
    if header is None:
        return
    try:
        declared = int(header)
    except ValueError:
        return
    if declared > max_file_bytes + FORM_OVERHEAD_BYTES:
        raise PayloadTooLarge(
            f"The file is larger than the {max_file_bytes}-byte limit.", code="file_too_large", field="file"
        )


def parse_thread_id(value: str | None) -> str:
    if not value:
        raise Unprocessable("Send the thread the file belongs to in 'threadId'.", field="threadId")
    return check_thread_id(value)


Sniffed = Literal["document", "audio", "image"]


def sniff(head: bytes) -> Sniffed:
    """The kind the first bytes announce. A file that announces one kind and carries a PDF header where
    PDF readers look for one is a polyglot: refused, so no reader can take it for something else."""
    if head.startswith(b"%PDF-"):
        return "document"
    if b"%PDF-" in head[:SNIFF_BYTES]:
        raise UnsupportedMediaType(
            "The file is another type with a PDF inside it (a polyglot); send the PDF or the other file"
            " alone.",
            code="unsupported_media_type",
            field="file",
            extra={"found": "polyglot"},
        )
    return "audio" if sniff_audio(head) is not None else "image"


def check_size(kind: Sniffed, size: int, settings: Settings, field: str = "file") -> None:
    """413 ``file_too_large`` when ``size`` is over the limit of the kind the bytes are."""
    limit = {
        "document": settings.max_document_bytes,
        "audio": settings.max_audio_bytes,
        "image": settings.max_image_bytes,
    }[kind]
    if size > limit:
        noun = {"document": "PDF", "audio": "audio file", "image": "image"}[kind]
        raise PayloadTooLarge(
            f"The {noun} is larger than the {limit}-byte limit.", code="file_too_large", field=field
        )


class Facts(msgspec.Struct, frozen=True, kw_only=True):
    """What the kind-specific inspection learned, in the row's terms."""

    mime_type: str
    width: int = 0
    height: int = 0
    pages: int | None = None
    duration_seconds: float | None = None
    pdf: PdfFacts | None = None


async def _inspect(
    file: SpooledFile, kind: Sniffed, settings: Settings, limiter: anyio.CapacityLimiter
) -> Facts:
    if kind == "image":
        image: ImageInfo = await anyio.to_thread.run_sync(
            lambda: inspect_image(file.path, max_pixels=settings.max_image_pixels), limiter=limiter
        )
        if image.repaired is not None:  # a PNG without its damaged optional chunks is what is kept
            await anyio.Path(file.path).write_bytes(image.repaired)
            file.size, file.sha256 = len(image.repaired), hashlib.sha256(image.repaired).hexdigest()
        return Facts(mime_type=image.mime_type, width=image.width, height=image.height)
    return await inspect_bytes(await anyio.Path(file.path).read_bytes(), kind, settings, limiter)


async def inspect_bytes(
    data: bytes,
    kind: Literal["document", "audio"],
    settings: Settings,
    limiter: anyio.CapacityLimiter,
    *,
    thumbnail_edge_px: int = THUMBNAIL_EDGE_PX,
) -> Facts:
    """Parse a PDF (in the bounded worker) or audio (in a worker thread) as an upload's are
    (``thumbnail_edge_px=0``: no thumbnail, for a PDF that is not kept)."""
    if kind == "audio":
        audio: AudioFacts = await anyio.to_thread.run_sync(
            lambda: inspect_audio(data, max_seconds=settings.max_audio_seconds), limiter=limiter
        )
        return Facts(mime_type=audio.mime_type, duration_seconds=round(audio.duration_seconds, 3))
    async with limiter:
        pdf = await inspect_pdf(
            data,
            max_pages=settings.max_document_pages,
            timeout=settings.pdf_timeout_seconds,
            memory_bytes=settings.pdf_worker_memory_bytes,
            thumbnail_edge_px=thumbnail_edge_px,
        )
    return Facts(mime_type="application/pdf", pages=pdf.pages, pdf=pdf)


async def store_derived(storage: Storage, path: str, pdf: PdfFacts) -> tuple[str | None, str]:
    """Store a PDF's thumbnail and page texts; their paths (no thumbnail path when none was made)."""
    thumbnail_path, text_path = derived_paths(path)
    await storage.put(
        text_path, once(json.dumps(list(pdf.page_texts)).encode()), content_type="application/json"
    )
    if pdf.thumbnail_png is None:
        return None, text_path
    await storage.put(thumbnail_path, once(pdf.thumbnail_png), content_type="image/png")
    return thumbnail_path, text_path


async def once(data: bytes) -> AsyncIterable[bytes]:
    yield data


async def remove_objects(storage: Storage, paths: list[str]) -> None:
    for path in paths:
        try:
            await storage.delete(path)
        except StorageError as exc:  # the original failure matters more than a leftover object
            log.warning("could not remove %s after a failed upload: %s", path, exc)


def upload_out(upload: Upload, signed: SignedUrl, thumbnail: SignedUrl | None = None) -> UploadOut:
    """The API view of an upload with a fresh signed URL (and its thumbnail's, for a PDF)."""
    kind = upload_kind(upload.mime_type)
    chat: ChatImagePart | ChatDocumentPart | ChatAudioPart
    if kind == "document":
        chat = ChatDocumentPart(document=signed.url, mime_type=upload.mime_type, name=upload.name)
    elif kind == "audio":
        chat = ChatAudioPart(audio=signed.url, mime_type=upload.mime_type, name=upload.name)
    else:
        chat = ChatImagePart(image=signed.url, mime_type=upload.mime_type, name=upload.name)
    return UploadOut(
        id=str(upload.id),
        thread_id=upload.thread_id,
        kind=kind,
        bucket=upload.bucket,
        path=upload.path,
        mime_type=upload.mime_type,
        name=upload.name,
        size=upload.size,
        width=upload.width,
        height=upload.height,
        pages=upload.pages,
        duration_seconds=upload.duration_seconds,
        thumbnail_url=thumbnail.url if thumbnail is not None else None,
        sha256=upload.sha256,
        created_at=upload.created_at,
        url=signed.url,
        expires_at=signed.expires_at,
        parts=ReadyParts(
            agui=AgUiMediaPart(
                type=kind,
                source=AgUiUrlSource(type="url", value=signed.url, mime_type=upload.mime_type),
                metadata=AgUiMediaMetadata(filename=upload.name),
            ),
            chat=chat,
        ),
    )


async def receive_upload(
    body: AsyncIterable[bytes],
    *,
    boundary: bytes,
    principal: Principal,
    settings: Settings,
    storage: Storage,
    db: AsyncSession,
    decode_limiter: anyio.CapacityLimiter,
) -> UploadOut:
    """Spool, sniff, check the thread, inspect, store, record, commit; on any failure remove what was
    stored."""
    form = await read_upload_form(
        body,
        boundary=boundary,
        file_field="file",
        max_file_bytes=largest_upload(settings),
        spool_dir=settings.data_path / "tmp",
    )
    file = form.file
    try:
        if file is None or file.size == 0:
            raise Unprocessable("Send the file in the 'file' field.", code="file_missing", field="file")
        async with await anyio.open_file(file.path, "rb") as handle:
            kind = sniff(await handle.read(SNIFF_BYTES))
        check_size(kind, file.size, settings)
        # Counted once received (decoding costs, whatever the outcome), committed before storage is touched.
        await admit_upload(db, principal, settings, file.size)
        await db.commit()
        thread_id = parse_thread_id(form.fields.get("threadId"))
        sessions, uploads = SessionRepository(session=db), UploadRepository(session=db)
        thread = await sessions.get_for_owner(thread_id, principal.user_id)
        if thread is not None and thread.deleted_at is not None:
            raise NotFound("No such thread.", code="thread_not_found", field="threadId")
        facts = await _inspect(file, kind, settings, decode_limiter)
        extension = UPLOAD_EXTENSION_BY_MIME[facts.mime_type]
        path = upload_path(principal.user_id, thread_id, extension)
        await storage.put_file(path, file.path, content_type=facts.mime_type)
        stored = [path]
        try:
            thumbnail_path = text_path = None
            if facts.pdf is not None:
                stored += derived_paths(path)
                thumbnail_path, text_path = await store_derived(storage, path, facts.pdf)
            upload = await uploads.add(
                Upload(
                    owner_id=principal.user_id,
                    thread_id=thread_id,
                    bucket=storage.bucket,
                    path=path,
                    mime_type=facts.mime_type,
                    name=clean_filename(file.filename, extension),
                    size=file.size,
                    width=facts.width,
                    height=facts.height,
                    sha256=file.sha256,
                    pages=facts.pages,
                    duration_seconds=facts.duration_seconds,
                    thumbnail_path=thumbnail_path,
                    text_path=text_path,
                )
            )
            await db.commit()
        except BaseException:
            await db.rollback()
            await remove_objects(storage, stored)
            raise
        signed = await storage.sign(
            [path, *([thumbnail_path] if thumbnail_path else [])], settings.signed_url_ttl_seconds
        )
        return upload_out(upload, signed[0], signed[1] if len(signed) > 1 else None)
    finally:
        if file is not None:
            await anyio.Path(file.path).unlink(missing_ok=True)
