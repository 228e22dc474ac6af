"""Signed-object downloads for the backends whose URLs point at Iris (local disk, S3), at Supabase's path
so clients need not care which backend is behind them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIFormat, OpenAPIType, Schema
from litestar.params import FromPath, QueryParameter
from litestar.response import File, Stream

from iris.app.api.openapi import documented
from iris.app.errors import BadRequest, Forbidden, NotFound
from iris.app.mime import SERVED_BY_EXTENSION
from iris.app.settings import Settings
from iris.app.storage.base import ObjectNotFound, ServedByIris, Storage
from iris.app.storage.local import LocalStorage
from iris.app.storage.tokens import TokenRejected, verify_object_token


class StorageController(Controller):
    """``GET /storage/v1/object/sign/{bucket}/{path}?token=`` (local and S3 storage)."""

    tags = ["Storage"]
    signature_types = [Settings]

    @get(
        "/storage/v1/object/sign/{bucket:str}/{objectPath:path}",
        operation_id="GetSignedObject",
        operation_class=documented(
            ok={
                mime: Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.BINARY)
                for mime in dict.fromkeys(SERVED_BY_EXTENSION.values())
            },
            problems={
                400: ["token_missing", "token_malformed"],
                403: ["token_expired", "token_invalid", "token_path_mismatch"],
                404: ["object_not_found", "route_not_found"],
                503: ["storage_unavailable"],
            },
        ),
    )
    async def signed_object(
        self,
        bucket: FromPath[str],
        objectPath: FromPath[str],
        storage: NamedDependency[Storage],
        token: Annotated[str | None, QueryParameter(required=True, schema_extra={"minLength": 1})] = None,
    ) -> File | Stream:
        """Stream the object if the token was signed for exactly this bucket and path and has not expired."""
        if not isinstance(storage, ServedByIris):
            raise NotFound("Objects are served by the storage backend, not by Iris.", code="route_not_found")
        path = objectPath.lstrip("/")
        try:
            verify_object_token(storage.secret, token, bucket, path)
        except TokenRejected as exc:
            if exc.reason in {"missing", "malformed"}:
                raise BadRequest(
                    "The URL needs a valid 'token' parameter.", code=f"token_{exc.reason}"
                ) from exc
            code = {"expired": "token_expired", "path_mismatch": "token_path_mismatch"}.get(
                exc.reason, "token_invalid"
            )
            raise Forbidden("The signed URL is not valid for this object.", code=code) from exc
        if bucket != storage.bucket:
            raise Forbidden("The signed URL is not valid for this object.", code="token_path_mismatch")
        media_type = SERVED_BY_EXTENSION.get(path.rpartition(".")[2], "application/octet-stream")
        if not isinstance(storage, LocalStorage):
            return await _streamed(storage, path, media_type)
        try:
            file_path = storage.file_for(path)
        except ValueError as exc:
            raise Forbidden(
                "The signed URL is not valid for this object.", code="token_path_mismatch"
            ) from exc
        if not file_path.is_file():
            raise NotFound("The object does not exist.", code="object_not_found")
        return File(
            path=file_path,
            media_type=media_type,
            content_disposition_type="inline",
            filename=file_path.name,
            headers=SIGNED_OBJECT_HEADERS,
        )


SIGNED_OBJECT_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "private, max-age=300",
    # Signed URLs are bearer-less by design: an <img> on any page may show them, even one that isolates
    # itself with Cross-Origin-Embedder-Policy.
    "Cross-Origin-Resource-Policy": "cross-origin",
}


async def _streamed(storage: ServedByIris, path: str, media_type: str) -> Stream:
    """The object chunk by chunk as the store sends it, never whole in memory. The first chunk is awaited
    here, so a missing object is a 404 and an unreachable store a 503 before any header is sent."""
    chunks = storage.open(path)
    try:
        first = await anext(chunks, b"")
    except ObjectNotFound as exc:
        raise NotFound("The object does not exist.", code="object_not_found") from exc

    async def body() -> AsyncIterator[bytes]:
        yield first
        async for chunk in chunks:
            yield chunk

    filename = path.rpartition("/")[2]
    return Stream(
        body(),
        media_type=media_type,
        headers={**SIGNED_OBJECT_HEADERS, "Content-Disposition": f'inline; filename="{filename}"'},
    )
