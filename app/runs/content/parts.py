"""Inbound user content → canonical stored parts (SPEC §3).

Every attachment (image, document, audio) is resolved to a recorded upload of the caller and this
thread — through the attachment URL policy for URLs, by owner and thread for legacy upload ids, or
made one from its inline bytes (:mod:`iris.app.media.inline_uploads`) — and
stored by bucket/path/type/size, never as the signed URL it arrived with. The upload must be of the
kind the part said (a ``document`` part naming an image is refused).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from iris.app.agui.input import AttachmentKind, InboundAttachment, inline_data_unsupported
from iris.app.errors import Unprocessable
from iris.app.media.inline_uploads import InlineUploads
from iris.app.media.uploads import upload_kind
from iris.app.persistence.models import Message, Upload
from iris.app.persistence.repositories import UploadRepository, parse_uuid
from iris.app.runs.content.attachments import audio_part, document_part, stored_fields
from iris.app.security.url_policy import AttachmentUrlRejected, UrlPolicy, resolve_attachment_url
from iris.app.settings import Settings


@dataclass(frozen=True, slots=True)
class PartLimits:
    """Most attachments of each kind one user message may carry (settings)."""

    image: int
    document: int
    audio: int

    @classmethod
    def of(cls, settings: Settings) -> PartLimits:
        return cls(
            image=settings.max_images_per_message,
            document=settings.max_documents_per_message,
            audio=settings.max_audio_per_message,
        )


def image_part(upload: Upload) -> dict[str, Any]:
    """The canonical part of a stored image."""
    return {
        **stored_fields("image", upload),
        "width": upload.width,
        "height": upload.height,
        "sha256": upload.sha256,
    }


UPLOADED_KINDS = ("image", "document", "audio")
"""Stored part types that name an upload."""


def image_parts(parts: Sequence[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The image parts of a stored message."""
    return [p for p in parts or () if p.get("type") == "image"]


async def deleted_uploads(uploads: UploadRepository, rows: Sequence[Message]) -> frozenset[str]:
    """Upload ids these messages name (images, documents, audio) whose upload was deleted since."""
    named = {
        str(p["uploadId"])
        for row in rows
        if row.role == "user"
        for p in row.parts or ()
        if p.get("type") in UPLOADED_KINDS and "uploadId" in p
    }
    ids = {pk for pk in (parse_uuid(i) for i in named) if pk is not None}
    existing = {str(pk) for pk in await uploads.existing_ids(ids)} if ids else set()
    return frozenset(named - existing)


async def canonical_user_parts(
    content: Sequence[str | InboundAttachment],
    *,
    user_id: str,
    thread_id: str,
    policy: UrlPolicy,
    uploads: UploadRepository,
    limits: PartLimits,
    field: str,
    inline: InlineUploads | None = None,
) -> list[dict[str, Any]]:
    """Text and resolved attachments, in order. 422 for an empty message or too many of a kind.
    Inline documents and audio (``data``) are checked by ``inline``, which stores them once the run is
    accepted; without it (a surface with no thread to keep them in) they are 422
    ``inline_data_unsupported``."""
    attachments = [p for p in content if isinstance(p, InboundAttachment)]
    for kind, most, noun in (
        ("image", limits.image, "images"),
        ("document", limits.document, "documents"),
        ("audio", limits.audio, "audio clips"),
    ):
        count = sum(1 for p in attachments if p.kind == kind)
        if count > most:
            raise Unprocessable(
                f"A message may carry at most {most} {noun}, not {count}.",
                code="too_many_images" if kind == "image" else f"too_many_{kind}",
                field=field,
            )
    if not attachments and not any(isinstance(p, str) and p.strip() for p in content):
        raise Unprocessable(
            "A message needs text or at least one attachment.", code="empty_message", field=field
        )
    out: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, str):
            if part:
                out.append({"type": "text", "text": part})
            continue
        if part.data is not None:
            if inline is None:
                raise inline_data_unsupported(part.field)
            upload = await inline.take(part, user_id=user_id, thread_id=thread_id)
        else:
            upload = await _resolve(
                part, user_id=user_id, thread_id=thread_id, policy=policy, uploads=uploads
            )
        out.append(_canonical(upload, part.kind, part.field))
    return out


def _canonical(upload: Upload, kind: AttachmentKind, field: str) -> dict[str, Any]:
    found = upload_kind(upload.mime_type)
    if found != kind:
        raise Unprocessable(
            f"This {kind} part names a {found} upload ({upload.mime_type}): send it as a {found} part.",
            code="unsupported_media_type",
            field=field,
        )
    if kind == "document":
        return document_part(upload)
    if kind == "audio":
        return audio_part(upload)
    return image_part(upload)


async def _resolve(
    image: InboundAttachment, *, user_id: str, thread_id: str, policy: UrlPolicy, uploads: UploadRepository
) -> Upload:
    if image.url is not None:
        try:
            return await resolve_attachment_url(
                image.url, user_id=user_id, thread_id=thread_id, policy=policy, uploads=uploads
            )
        except AttachmentUrlRejected as exc:
            exc.field = image.field
            raise
    upload_id = parse_uuid(image.upload_id or "")
    upload = None if upload_id is None else await uploads.get_owned(upload_id, user_id)
    if upload is None or upload.thread_id != thread_id:
        raise Unprocessable(
            "No upload with this id belongs to you and this thread.",
            code="upload_not_found",
            field=image.field,
        )
    return upload
