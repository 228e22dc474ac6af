"""Base64 a request carries in its JSON (an OpenAI ``data:`` URL's payload, an AG-UI ``data`` source),
decoded within a byte limit: refused by its encoded length before a byte of it is decoded.

``binascii`` holds the GIL for the whole of its input, so a long payload (a PDF inline on
``/agent/runs`` is up to 45 MB of base64) is decoded in a worker thread a slice at a time
(:func:`decode_base64_off_loop`): between slices the event loop gets the GIL back.
"""

from __future__ import annotations

import base64
import binascii
import functools

import anyio.to_thread

from iris.app.errors import PayloadTooLarge, Unprocessable

OFF_LOOP_CHARS = 1024 * 1024
"""Longer base64 is decoded in a worker thread, not on the event loop."""
SLICE_CHARS = 1024 * 1024
"""Base64 characters decoded at a time (a multiple of 4): the longest the loop waits for the GIL."""


def decode_base64(encoded: str, *, max_bytes: int, field: str, noun: str, invalid_code: str) -> bytes:
    """The bytes of standard base64 ``encoded`` (outer whitespace ignored, none inside): 413
    ``file_too_large`` past ``max_bytes`` (from its length, before decoding), 422 ``invalid_code`` when it
    is not base64. ``noun`` names the file in the messages ("image", "PDF" …)."""
    encoded = encoded.strip()
    if len(encoded) * 3 // 4 > max_bytes + 2:  # refused before decoding a byte of it
        raise too_large(noun, max_bytes, field)
    try:
        if encoded.find("=", 0, len(encoded) - 2) != -1:  # padding before the end: each slice can't tell
            raise ValueError("padding inside the data")
        data = b"".join(
            base64.b64decode(encoded[start : start + SLICE_CHARS], validate=True)
            for start in range(0, len(encoded), SLICE_CHARS)
        )
    except (binascii.Error, ValueError):
        raise Unprocessable(
            f"The {noun}'s base64 does not decode (standard alphabet, padded, no line breaks).",
            code=invalid_code,
            field=field,
        ) from None
    if len(data) > max_bytes:
        raise too_large(noun, max_bytes, field)
    return data


async def decode_base64_off_loop(
    encoded: str,
    *,
    max_bytes: int,
    field: str,
    noun: str,
    invalid_code: str,
    limiter: anyio.CapacityLimiter | None = None,
) -> bytes:
    """:func:`decode_base64`, in a worker thread (taking a slot of ``limiter``) when ``encoded`` is
    longer than :data:`OFF_LOOP_CHARS`."""
    decode = functools.partial(
        decode_base64, encoded, max_bytes=max_bytes, field=field, noun=noun, invalid_code=invalid_code
    )
    if len(encoded) <= OFF_LOOP_CHARS:
        return decode()
    return await anyio.to_thread.run_sync(decode, limiter=limiter)


def too_large(noun: str, max_bytes: int, field: str) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"The {noun} is larger than the {max_bytes}-byte limit.", code="file_too_large", field=field
    )
