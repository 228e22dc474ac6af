"""Uploads of images, PDFs and audio (seed 002's ``/api/file/upload`` path is an alias)."""

from __future__ import annotations

from typing import Any

import anyio
from litestar import Controller, Request, post
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIFormat, OpenAPIType, Schema
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.api.openapi import documented
from iris.app.media.multipart import MAX_FIELD_BYTES, MAX_PARTS, multipart_boundary
from iris.app.media.uploads import check_content_length, largest_upload, receive_upload
from iris.app.schemas.uploads import UploadOut
from iris.app.security.auth import Principal
from iris.app.settings import Settings
from iris.app.storage.base import Storage
from iris.app.threads import THREAD_ID_PATTERN

# The handler reads the body itself (streaming), so OpenAPI is told its shape here.
_FORM = Schema(
    type=OpenAPIType.OBJECT,
    properties={
        "file": Schema(
            type=OpenAPIType.STRING,
            format=OpenAPIFormat.BINARY,
            min_length=1,  # an empty file is 422 file_missing
            description=(
                "One PNG, JPEG or WebP image, PDF, or WAV or MP3 audio file (the type is sniffed from the"
                " bytes)."
            ),
        ),
        "threadId": Schema(
            type=OpenAPIType.STRING,
            pattern=THREAD_ID_PATTERN,
            description="The caller's thread, or a new one's id (an opaque id, echoed exactly).",
        ),
    },
    required=["file", "threadId"],
    # Other fields are ignored; the parser takes at most MAX_PARTS parts (422 too_many_parts).
    additional_properties=Schema(type=OpenAPIType.STRING, max_length=MAX_FIELD_BYTES),
    max_properties=MAX_PARTS,
)


def _operation_id(_handler: object, _method: object, components: list[Any]) -> str:
    # One handler, two paths; OpenAPI needs an id per path.
    return "UploadFile" if "files" in components else "UploadFileLegacyPath"


class FileController(Controller):
    """``POST /api/files``: multipart ``file`` + ``threadId``."""

    tags = ["Files"]
    security = [{"BearerToken": []}]
    signature_types = [Principal, Settings, AsyncSession, anyio.CapacityLimiter]

    @post(
        ["/api/files", "/api/file/upload"],
        operation_id=_operation_id,
        operation_class=documented(
            form=_FORM,
            problems={
                400: ["malformed_body"],
                404: ["thread_not_found"],
                413: ["file_too_large"],
                415: ["multipart_required", "unsupported_media_type"],
                422: [
                    "audio_out_of_range",
                    "audio_too_long",
                    "audio_undecodable",
                    "document_encrypted",
                    "document_too_many_pages",
                    "document_undecodable",
                    "file_missing",
                    "image_too_large",
                    "image_undecodable",
                    "invalid_thread_id",
                    "too_many_files",
                    "too_many_parts",
                    "unexpected_file",
                    "validation_failed",
                ],
                429: ["quota_exceeded"],
                503: ["storage_unavailable"],
            },
        ),
        status_code=201,
        # The body is streamed and limited by the upload code itself, on the file's own limit.
        request_max_body_size=None,
    )
    async def upload(
        self,
        request: Request[Any, Any, Any],
        principal: NamedDependency[Principal],
        settings: NamedDependency[Settings],
        storage: NamedDependency[Storage],
        db_session: NamedDependency[AsyncSession],
        decode_limiter: NamedDependency[anyio.CapacityLimiter],
    ) -> UploadOut:
        """Upload one image (PNG, JPEG, WebP), PDF or audio file (WAV, MP3) for a thread (the caller's,
        or a new one).

        The type is sniffed from the bytes, never the name or declared type; each kind has its own size
        limit, PDFs a page limit and audio a duration limit. Answers the record, a signed URL with its
        expiry, what Iris learned (``pages`` and ``thumbnailUrl`` for a PDF, ``durationSeconds`` for
        audio) and the file as a ready-to-send AG-UI 1.0 part and seed-002-style part.
        """
        check_content_length(request.headers.get("content-length"), largest_upload(settings))
        boundary = multipart_boundary(request.headers.get("content-type"))
        return await receive_upload(
            request.stream(),
            boundary=boundary,
            principal=principal,
            settings=settings,
            storage=storage,
            db=db_session,
            decode_limiter=decode_limiter,
        )
