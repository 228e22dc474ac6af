"""Images sent inline in a request (an OpenAI ``data:`` URL), checked exactly like an upload: at most
``IRIS_MAX_IMAGE_BYTES``, the type sniffed from the bytes by Pillow (PNG, JPEG, WebP), fully decoded
under the decompression-bomb limit, in the same bounded pool of worker threads. Nothing is stored: the
bytes live as long as the request, and the pipeline normalises them from memory.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import anyio

from app.errors import IrisError, Unprocessable
from app.media.base64_data import decode_base64
from app.media.images import inspect_image

_DATA_URL = re.compile(r"^data:(?P<type>[^;,]*)(?P<params>(?:;[^;,]*)*),(?P<data>.*)$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class InlineImage:
    """A checked inline image: its original bytes and what Pillow found."""

    data: bytes
    mime_type: str
    width: int
    height: int
    sha256: str
    name: str


def decode_data_url(
    url: str, *, max_bytes: int, field: str, noun: str = "image", example: str = "data:image/png;base64,…"
) -> bytes:
    """The bytes of a base64 ``data:`` URL (its declared type is not trusted: the bytes are sniffed
    later); 413 ``file_too_large`` past ``max_bytes``, 422 ``invalid_data_url`` when it is not one."""
    match = _DATA_URL.match(url)
    if match is None or ";base64" not in match["params"].lower():
        raise Unprocessable(
            f"An inline {noun} must be a base64 data URL ({example}).", code="invalid_data_url", field=field
        )
    return decode_base64(
        match["data"], max_bytes=max_bytes, field=field, noun=noun, invalid_code="invalid_data_url"
    )


async def inspect_inline(
    data: bytes, *, name: str, max_pixels: int, limiter: anyio.CapacityLimiter, field: str
) -> InlineImage:
    """Sniff and decode ``data`` as an upload's bytes are (415 / 422 naming ``field``)."""
    try:
        info = await anyio.to_thread.run_sync(
            lambda: inspect_image(data, max_pixels=max_pixels), limiter=limiter
        )
    except IrisError as exc:
        exc.field = field
        raise
    if info.repaired is not None:  # a PNG without its damaged optional chunks
        data = info.repaired
    return InlineImage(
        data=data,
        mime_type=info.mime_type,
        width=info.width,
        height=info.height,
        sha256=hashlib.sha256(data).hexdigest(),
        name=name or f"image.{info.extension}",
    )
