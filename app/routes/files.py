"""Image uploads (seed 002's ``/api/file/upload`` path is an alias)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
from litestar import Controller, Request, post
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIFormat, OpenAPIMediaType, OpenAPIType, Operation, RequestBody, Schema
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import Principal
from app.multipart import multipart_boundary
from app.schemas.uploads import UploadOut
from app.settings import Settings
from app.storage.base import Storage
from app.uploads import check_content_length, receive_upload


@dataclass
class _UploadOperation(Operation):
    """The handler reads the body itself (streaming), so OpenAPI is told its shape here."""

    def __post_init__(self) -> None:
        form = Schema(
            type=OpenAPIType.OBJECT,
            properties={
                "file": Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.BINARY),
                "threadId": Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.UUID),
            },
            required=["file", "threadId"],
        )
        self.request_body = RequestBody(
            content={"multipart/form-data": OpenAPIMediaType(schema=form)}, required=True
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
        operation_class=_UploadOperation,
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
        """Upload one PNG, JPEG or WebP image for a thread (the caller's, or a new one).

        The type is sniffed from the bytes. Answers the record, a signed URL with its expiry, and the
        image as a ready-to-send AG-UI 1.0 part and seed-002 part.
        """
        check_content_length(request.headers.get("content-length"), settings.max_image_bytes)
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
