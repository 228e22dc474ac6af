"""Real images made with Pillow, for provider tests (no fixtures on disk)."""

from __future__ import annotations

import io

from PIL import Image


def image_bytes(
    fmt: str, size: tuple[int, int] = (64, 48), color: tuple[int, int, int] = (200, 30, 30)
) -> bytes:
    """A solid-colour image in ``fmt`` (``PNG``, ``JPEG``, ``WEBP``, ``GIF``, ``BMP``, ``TIFF``)."""
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format=fmt)
    return buffer.getvalue()
