"""Real images, made with Pillow (and one hand-built PNG decompression bomb)."""

from __future__ import annotations

import io
import os
import struct
import zlib

from PIL import Image

from iris.providers.testing.images import image_bytes

__all__ = ["PDF", "SVG", "TEXT", "image_bytes", "noise_png", "png_bomb"]


def noise_png(approx_bytes: int) -> bytes:
    """An incompressible RGB PNG of roughly ``approx_bytes`` (random pixels do not compress)."""
    side = max(8, int((approx_bytes / 3) ** 0.5))
    image = Image.frombytes("RGB", (side, side), os.urandom(side * side * 3))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def png_bomb(width: int = 20000, height: int = 20000) -> bytes:
    """A valid 1-bit greyscale PNG whose pixels would take ``width*height`` bytes once decoded."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + b"\x00" * ((width + 7) // 8)
    compressor = zlib.compressobj(9)
    idat = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def png_with_huge_icc_profile() -> bytes:
    """A valid PNG whose iCCP chunk inflates past Pillow's ``MAX_TEXT_CHUNK`` (2 KB on the wire)."""
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (10, 20, 30)).save(buffer, format="PNG", icc_profile=b"\0" * (2 * 1024 * 1024))
    return buffer.getvalue()


SVG = b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect/></svg>'
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
TEXT = b"just some text, not an image at all\n"
