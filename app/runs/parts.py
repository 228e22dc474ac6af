"""Inbound user content → canonical stored parts (SPEC §3).

Every image is resolved to a recorded upload of the caller and this thread — through the
attachment URL policy for URLs, by owner and thread for legacy upload ids — and stored by
bucket/path/type/size, never as the signed URL it arrived with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.agui.input import InboundImage
from app.errors import Unprocessable
from app.persistence.models import Message, Upload
from app.persistence.repositories import UploadRepository, parse_uuid
from app.security.url_policy import AttachmentUrlRejected, UrlPolicy, resolve_attachment_url


def image_part(upload: Upload) -> dict[str, Any]:
    """The canonical part of a stored image."""
    return {
        "type": "image",
        "uploadId": str(upload.id),
        "bucket": upload.bucket,
        "path": upload.path,
        "mimeType": upload.mime_type,
        "name": upload.name,
        "size": upload.size,
        "width": upload.width,
        "height": upload.height,
        "sha256": upload.sha256,
    }


def deleted_note(part: dict[str, Any]) -> str:
    """What stands in for an image whose upload was deleted (``delete_attachment``)."""
    return f"[image deleted: {part.get('name') or 'unnamed'}]"


def image_parts(parts: Sequence[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The image parts of a stored message."""
    return [p for p in parts or () if p.get("type") == "image"]


async def deleted_uploads(uploads: UploadRepository, rows: Sequence[Message]) -> frozenset[str]:
    """Upload ids these messages name whose upload was deleted since (``delete_attachment``)."""
    named = {
        str(p["uploadId"])
        for row in rows
        if row.role == "user"
        for p in image_parts(row.parts)
        if "uploadId" in p
    }
    ids = {pk for pk in (parse_uuid(i) for i in named) if pk is not None}
    existing = {str(pk) for pk in await uploads.existing_ids(ids)} if ids else set()
    return frozenset(named - existing)


async def canonical_user_parts(
    content: Sequence[str | InboundImage],
    *,
    user_id: str,
    thread_id: str,
    policy: UrlPolicy,
    uploads: UploadRepository,
    max_images: int,
    field: str,
) -> list[dict[str, Any]]:
    """Text and resolved images, in order. 422 for an empty message or too many images."""
    images = [p for p in content if isinstance(p, InboundImage)]
    if len(images) > max_images:
        raise Unprocessable(
            f"A message may carry at most {max_images} images, not {len(images)}.",
            code="too_many_images",
            field=field,
        )
    if not images and not any(isinstance(p, str) and p.strip() for p in content):
        raise Unprocessable("A message needs text or at least one image.", code="empty_message", field=field)
    out: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, str):
            if part:
                out.append({"type": "text", "text": part})
            continue
        upload = await _resolve(part, user_id=user_id, thread_id=thread_id, policy=policy, uploads=uploads)
        if not upload.mime_type.startswith("image/"):
            raise Unprocessable(
                f"The upload {upload.name!r} is {upload.mime_type}, not an image: send it as another part.",
                code="upload_not_an_image",
                field=part.field,
            )
        out.append(image_part(upload))
    return out


async def _resolve(
    image: InboundImage, *, user_id: str, thread_id: str, policy: UrlPolicy, uploads: UploadRepository
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
