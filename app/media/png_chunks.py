"""A PNG's chunks checked before it is decoded, and one that is damaged only where nothing depends on it
repaired.

Every chunk of a PNG carries a CRC of its type and data. Pillow refuses a file whose optional (ancillary)
chunk fails it, and does not look at the CRC of the pixel data at all. Browsers and libpng skip a bad
ancillary chunk (a colour profile, text, a timestamp) and show the pixels, and real servers send such files
(the reference MCP server's logo has a bad ``iCCP`` CRC). So: a chunk whose CRC fails and whose type says
ancillary (lower-case first letter) is dropped and the rest kept byte for byte; a failing critical chunk
(``IHDR``, ``PLTE``, ``IDAT``, ``IEND``, or any upper-case type), a file that ends before ``IEND`` or a chunk
that is not one is :class:`PngDamage`, saying what is wrong. An intact file is returned as it came.
"""

from __future__ import annotations

import zlib

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_ANCILLARY = 0x20  # bit 5 of a chunk type's first byte: a lower-case letter


class PngDamage(ValueError):
    """The PNG is damaged where its pixels depend on it; the message says how."""


def is_png(head: bytes) -> bool:
    return head.startswith(PNG_SIGNATURE)


def checked_png(data: bytes) -> bytes:
    """``data`` itself when every chunk is intact, else the PNG without its damaged ancillary chunks;
    :class:`PngDamage` when a critical chunk is damaged or the file is cut short."""
    view = memoryview(data)
    kept: list[tuple[int, int]] = []  # where the intact chunks are
    dropped = False
    at = len(PNG_SIGNATURE)
    while True:
        if at + 12 > len(data):
            raise PngDamage("it is truncated (it ends before its IEND chunk)")
        length = int.from_bytes(data[at : at + 4], "big")
        kind = data[at + 4 : at + 8]
        if not kind.isalpha() or not kind.isascii() or length > 0x7FFFFFFF:
            raise PngDamage(f"it holds something that is not a PNG chunk at byte {at}")
        name = kind.decode("ascii")
        end = at + 12 + length
        if end > len(data):
            raise PngDamage(f"it is truncated (it ends inside its {name} chunk)")
        crc = int.from_bytes(data[end - 4 : end], "big")
        if zlib.crc32(view[at + 4 : end - 4]) == crc:
            kept.append((at, end))
        elif kind[0] & _ANCILLARY:
            dropped = True
        else:
            raise PngDamage(f"its {name} chunk fails its CRC check")
        at = end
        if kind == b"IEND":
            return PNG_SIGNATURE + b"".join(view[a:b] for a, b in kept) if dropped else data
