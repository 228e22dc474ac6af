"""Receiving an image upload: stream, check, store, record — and leave nothing behind on failure."""

from __future__ import annotations

import unicodedata
import uuid
from collections.abc import AsyncIterable
from pathlib import PurePosixPath, PureWindowsPath

import anyio
from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import NotFound, PayloadTooLarge, Unprocessable
from app.media.images import ImageInfo, inspect_image
from app.media.multipart import SpooledFile, read_upload_form
from app.persistence.models import Upload
from app.persistence.repositories import SessionRepository, UploadRepository
from app.schemas.uploads import (
    AgUiImageMetadata,
    AgUiImagePart,
    AgUiUrlSource,
    ChatImagePart,
    ReadyParts,
    UploadOut,
)
from app.security.auth import Principal
from app.security.quotas import admit_upload
from app.settings import Settings
from app.storage.base import SignedUrl, Storage
from app.threads import check_thread_id, thread_segment

# Multipart framing (boundaries, part headers, the threadId field) on top of the file itself.
FORM_OVERHEAD_BYTES = 64 * 1024
# Decoding is CPU- and memory-heavy: at most this many at once per process, whatever the load.
DECODE_SLOTS = 2


def upload_path(user_id: str, thread_id: str, extension: str) -> str:
    """``agent-inputs/{userId}/{threadSegment}/uploads/{uuid}.{ext}`` — the layout the URL policy expects
    (the thread's segment is :func:`app.threads.thread_segment`)."""
    return f"agent-inputs/{user_id}/{thread_segment(thread_id)}/uploads/{uuid.uuid4()}.{extension}"


def clean_filename(raw: str, extension: str) -> str:
    """The client's file name without directories or control characters, at most 255 characters."""
    name = PureWindowsPath(PurePosixPath(raw).name).name
    name = "".join(c for c in unicodedata.normalize("NFC", name) if unicodedata.category(c)[0] != "C").strip()
    return name[:255] or f"image.{extension}"


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
        raise Unprocessable("Send the thread the image belongs to in 'threadId'.", field="threadId")
    return check_thread_id(value)


async def _inspect(file: SpooledFile, max_pixels: int, limiter: anyio.CapacityLimiter) -> ImageInfo:
    return await anyio.to_thread.run_sync(
        lambda: inspect_image(file.path, max_pixels=max_pixels), limiter=limiter
    )


def upload_out(upload: Upload, signed: SignedUrl) -> UploadOut:
    """The API view of an upload with a fresh signed URL."""
    return UploadOut(
        id=str(upload.id),
        thread_id=upload.thread_id,
        bucket=upload.bucket,
        path=upload.path,
        mime_type=upload.mime_type,
        name=upload.name,
        size=upload.size,
        width=upload.width,
        height=upload.height,
        sha256=upload.sha256,
        created_at=upload.created_at,
        url=signed.url,
        expires_at=signed.expires_at,
        parts=ReadyParts(
            agui=AgUiImagePart(
                type="image",
                source=AgUiUrlSource(type="url", value=signed.url, mime_type=upload.mime_type),
                metadata=AgUiImageMetadata(filename=upload.name),
            ),
            chat=ChatImagePart(type="image", image=signed.url, mime_type=upload.mime_type, name=upload.name),
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
    """Spool, check the thread, decode, store, record, commit; on any failure remove what was stored."""
    form = await read_upload_form(
        body,
        boundary=boundary,
        file_field="file",
        max_file_bytes=settings.max_image_bytes,
        spool_dir=settings.data_path / "tmp",
    )
    file = form.file
    try:
        if file is None or file.size == 0:
            raise Unprocessable("Send the image in the 'file' field.", code="file_missing", field="file")
        # Counted once received (decoding costs, whatever the outcome), committed before storage is touched.
        await admit_upload(db, principal, settings, file.size)
        await db.commit()
        thread_id = parse_thread_id(form.fields.get("threadId"))
        sessions, uploads = SessionRepository(session=db), UploadRepository(session=db)
        thread = await sessions.get_for_owner(thread_id, principal.user_id)
        if thread is not None and thread.deleted_at is not None:
            raise NotFound("No such thread.", code="thread_not_found", field="threadId")
        info = await _inspect(file, settings.max_image_pixels, decode_limiter)
        path = upload_path(principal.user_id, thread_id, info.extension)
        await storage.put_file(path, file.path, content_type=info.mime_type)
        try:
            upload = await uploads.add(
                Upload(
                    owner_id=principal.user_id,
                    thread_id=thread_id,
                    bucket=storage.bucket,
                    path=path,
                    mime_type=info.mime_type,
                    name=clean_filename(file.filename, info.extension),
                    size=file.size,
                    width=info.width,
                    height=info.height,
                    sha256=file.sha256,
                )
            )
            await db.commit()
        except BaseException:
            await db.rollback()
            await storage.delete(path)
            raise
        (signed,) = await storage.sign([path], settings.signed_url_ttl_seconds)
        return upload_out(upload, signed)
    finally:
        if file is not None:
            await anyio.Path(file.path).unlink(missing_ok=True)
