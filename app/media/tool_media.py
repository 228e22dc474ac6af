"""What a tool returned, made storable: images and audio go to the object store as uploads of the
thread (like a user's, so history re-signs them and the model gets them through the image pipeline),
and the result is kept as canonical parts that never hold bytes or a URL.

Sizes are bounded (text bytes, how many images and clips, bytes of each): a result over a limit is
refused as a whole with a reason the model reads, rather than cut silently.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import msgspec
from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig

from iris.app.errors import IrisError
from iris.app.media.images import inspect_image
from iris.app.media.uploads import upload_path
from iris.app.mime import AUDIO_EXTENSIONS
from iris.app.persistence.db import session_scope
from iris.app.persistence.models import Upload
from iris.app.persistence.repositories import UploadRepository
from iris.app.storage.base import Storage
from iris.tools import (
    AudioContent,
    ContentPart,
    ImageContent,
    JsonContent,
    ResourceContent,
    ResourceLinkContent,
    TextContent,
)


class ResultTooLarge(Exception):
    """The result breaks a limit; the message says which, for the model."""


@dataclass(frozen=True, slots=True)
class ResultLimits:
    max_text_bytes: int
    max_media: int
    max_media_bytes: int
    max_image_pixels: int


@dataclass(frozen=True, slots=True)
class MediaStore:
    """Where a run's tool media go: the thread's uploads, written in a session of their own."""

    storage: Storage
    alchemy: SQLAlchemyAsyncConfig
    limiter: anyio.CapacityLimiter
    limits: ResultLimits


def check_limits(content: Sequence[ContentPart], limits: ResultLimits) -> None:
    """Raise :class:`ResultTooLarge` when the result is over a limit (before anything is stored)."""
    text = sum(len(_text_of(part).encode()) for part in content)
    if text > limits.max_text_bytes:
        raise ResultTooLarge(
            f"the result has {text} bytes of text; at most {limits.max_text_bytes} are taken"
        )
    media = [p for p in content if isinstance(p, ImageContent | AudioContent)]
    if len(media) > limits.max_media:
        raise ResultTooLarge(
            f"the result has {len(media)} images or clips; at most {limits.max_media} are taken"
        )
    for part in content:
        data = part.data if isinstance(part, ImageContent | AudioContent | ResourceContent) else None
        if data is not None and len(data) > limits.max_media_bytes:
            raise ResultTooLarge(
                f"a {_kind(part)} of {len(data)} bytes is over the {limits.max_media_bytes}-byte limit"
            )


async def canonical_parts(
    content: Sequence[ContentPart],
    store: MediaStore,
    *,
    owner_id: str,
    thread_id: str,
    server: str | None = None,
) -> list[dict[str, Any]]:
    """Canonical parts for the result, its media stored first; an image that is not PNG, JPEG or WebP
    (or does not decode) is kept as a note saying so. ``server``: the MCP server that returned the
    result, recorded on its resource links (the only server they are read from)."""
    out: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextContent):
            out.append({"type": "text", "text": part.text})
        elif isinstance(part, JsonContent):
            out.append({"type": "json", "value": msgspec.to_builtins(part.value)})
        elif isinstance(part, ResourceLinkContent):
            out.append(
                _without_none(
                    {
                        "type": "resource_link",
                        "uri": part.uri,
                        "name": part.name,
                        "mimeType": part.mime_type,
                        "description": part.description,
                        "size": part.size,
                        "server": server,
                    }
                )
            )
        elif isinstance(part, ImageContent):
            out.append(await _image(part, store, owner_id, thread_id))
        elif isinstance(part, AudioContent):
            extension = AUDIO_EXTENSIONS.get(part.mime_type.lower(), "bin")
            stored = await _store(part.data, part.mime_type, extension, store, owner_id, thread_id)
            out.append({"type": "audio", **stored})
        elif part.data is not None:
            stored = await _store(
                part.data, part.mime_type or "application/octet-stream", "bin", store, owner_id, thread_id
            )
            out.append({"type": "resource", "uri": part.uri, **stored})
        else:
            out.append(
                _without_none(
                    {"type": "resource", "uri": part.uri, "mimeType": part.mime_type, "text": part.text or ""}
                )
            )
    return out


async def _image(part: ImageContent, store: MediaStore, owner_id: str, thread_id: str) -> dict[str, Any]:
    try:
        info = await anyio.to_thread.run_sync(
            lambda: inspect_image(part.data, max_pixels=store.limits.max_image_pixels), limiter=store.limiter
        )
    except IrisError as exc:
        return {"type": "text", "text": f"[an image ({part.mime_type}) was not kept: {exc.detail}]"}
    data = info.repaired if info.repaired is not None else part.data  # a PNG without its damaged extras
    stored = await _store(data, info.mime_type, info.extension, store, owner_id, thread_id)
    return {"type": "image", **stored, "width": info.width, "height": info.height}


async def _store(
    data: bytes, mime_type: str, extension: str, store: MediaStore, owner_id: str, thread_id: str
) -> dict[str, Any]:
    """The bytes as an upload of the thread: the object, then its record (the object goes if that fails)."""
    path = upload_path(owner_id, thread_id, extension)

    async def chunks() -> Any:
        yield data

    await store.storage.put(path, chunks(), content_type=mime_type)
    name = f"tool-result.{extension}"
    sha256 = hashlib.sha256(data).hexdigest()
    try:
        async with session_scope(store.alchemy) as db:
            upload = await UploadRepository(session=db).add(
                Upload(
                    owner_id=owner_id,
                    thread_id=thread_id,
                    bucket=store.storage.bucket,
                    path=path,
                    mime_type=mime_type,
                    name=name,
                    size=len(data),
                    width=0,
                    height=0,
                    sha256=sha256,
                )
            )
    except BaseException:
        await store.storage.delete(path)
        raise
    return {
        "uploadId": str(upload.id),
        "bucket": store.storage.bucket,
        "path": path,
        "mimeType": mime_type,
        "name": name,
        "size": len(data),
        "sha256": sha256,
    }


def _text_of(part: ContentPart) -> str:
    if isinstance(part, TextContent):
        return part.text
    if isinstance(part, ResourceContent):
        return part.text or ""
    if isinstance(part, JsonContent):
        return msgspec.json.encode(part.value).decode()
    return ""


def _kind(part: ContentPart) -> str:
    return {ImageContent: "image", AudioContent: "audio clip"}.get(type(part), "resource")


def _without_none(part: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in part.items() if v is not None}
