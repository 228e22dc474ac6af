"""Base64 a request carries in its JSON (an OpenAI ``data:`` URL's payload, an AG-UI ``data`` source),
decoded within a byte limit: refused by its encoded length before a byte of it is decoded."""

from __future__ import annotations

import base64
import binascii

from app.errors import PayloadTooLarge, Unprocessable


def decode_base64(encoded: str, *, max_bytes: int, field: str, noun: str, invalid_code: str) -> bytes:
    """The bytes of standard base64 ``encoded`` (outer whitespace ignored, none inside): 413
    ``file_too_large`` past ``max_bytes`` (from its length, before decoding), 422 ``invalid_code`` when it
    is not base64. ``noun`` names the file in the messages ("image", "PDF" …)."""
    encoded = encoded.strip()
    if len(encoded) * 3 // 4 > max_bytes + 2:  # refused before decoding a byte of it
        raise too_large(noun, max_bytes, field)
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise Unprocessable(
            f"The {noun}'s base64 does not decode (standard alphabet, padded, no line breaks).",
            code=invalid_code,
            field=field,
        ) from None
    if len(data) > max_bytes:
        raise too_large(noun, max_bytes, field)
    return data


def too_large(noun: str, max_bytes: int, field: str) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"The {noun} is larger than the {max_bytes}-byte limit.", code="file_too_large", field=field
    )
