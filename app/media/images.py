"""What an uploaded file really is, decided from its bytes by Pillow (never its name or declared type)."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import msgspec
from PIL import Image, UnidentifiedImageError

from iris.app.errors import Unprocessable, UnsupportedMediaType
from iris.app.media.png_chunks import PngDamage, checked_png, is_png
from iris.app.mime import ACCEPTED_IMAGES

# Only for naming what a refused file is; nothing here is ever decoded.
_SIGNATURES: list[tuple[bytes, str]] = [
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"%PDF", "PDF"),
    (b"BM", "BMP"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
    (b"\x00\x00\x01\x00", "ICO"),
    (b"PK\x03\x04", "ZIP"),
]


class ImageInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A decoded, accepted image."""

    mime_type: str
    extension: str
    width: int
    height: int
    repaired: bytes | None = None
    """The bytes to keep instead of the source's: a PNG whose damaged optional chunks were dropped
    (:mod:`iris.app.media.png_chunks`); None when the source is kept as it came."""


def describe_unknown(head: bytes) -> str:
    """A human name for bytes that are not an accepted image ('GIF', 'SVG', 'text', …)."""
    for signature, name in _SIGNATURES:
        if head.startswith(signature):
            return name
    if head[4:12] in {b"ftypheic", b"ftypheix", b"ftypmif1", b"ftypavif"}:
        return "HEIC/AVIF"
    text = head.lstrip().lower()
    if text.startswith((b"<svg", b"<?xml")) and b"<svg" in head.lower():
        return "SVG"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return "unrecognised binary data"
    return "text"


def inspect_image(source: Path | bytes, *, max_pixels: int) -> ImageInfo:
    """Identify and fully decode the image at ``source`` (a file, or bytes sent inline); 415 for other
    types, 422 for broken or huge ones. A PNG's chunks are checked first: one damaged only in optional
    chunks is decoded (and kept, ``repaired``) without them; one damaged in its pixels is refused saying
    how (:mod:`iris.app.media.png_chunks`).

    Blocking (it decodes): run it in a worker thread.
    """
    if isinstance(source, Path):
        with source.open("rb") as handle:
            head = handle.read(64)
        data = source.read_bytes() if is_png(head) else None
    else:
        head, data = source[:64], source
    repaired = None
    if data is not None and is_png(head):
        try:
            checked = checked_png(data)
        except PngDamage as exc:
            raise _undecodable(f"The PNG is damaged: {exc}.") from exc
        repaired = checked if checked is not data else None
    kept = repaired if repaired is not None else source if data is None else data
    info = _decode(kept, head, max_pixels=max_pixels)
    return msgspec.structs.replace(info, repaired=repaired) if repaired is not None else info


def _decode(source: Path | bytes, head: bytes, *, max_pixels: int) -> ImageInfo:
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            image = Image.open(
                io.BytesIO(source) if isinstance(source, bytes) else source, formats=list(ACCEPTED_IMAGES)
            )
        except UnidentifiedImageError as exc:
            if is_png(head):  # a PNG whose chunks are whole but whose header Pillow cannot read
                raise _undecodable("The PNG is damaged: its header does not decode.") from exc
            found = describe_unknown(head)
            raise UnsupportedMediaType(
                f"Only PNG, JPEG and WebP images are accepted; this file is {found}.",
                code="unsupported_media_type",
                field="file",
                extra={"found": found},
            ) from exc
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise _too_many_pixels(max_pixels) from exc
        except Exception as exc:
            # Pillow's decoders raise more than OSError on hostile input (ValueError for a PNG iCCP or
            # text chunk that inflates past its limit, struct.error, SyntaxError, …): all mean undecodable.
            raise _undecodable() from exc
        with image:
            fmt = image.format or ""
            if fmt not in ACCEPTED_IMAGES:  # pragma: no cover - `formats=` already restricts this
                raise UnsupportedMediaType(f"Unexpected image format {fmt}.", field="file")
            width, height = image.size  # before draft(), which shrinks it
            if width * height > max_pixels:
                raise _too_many_pixels(max_pixels)
            try:
                if fmt == "JPEG":
                    # At 1/8 scale the decoder still reads every byte (truncation shows) in 1/64 the memory.
                    image.draft(image.mode, (max(1, image.width // 8), max(1, image.height // 8)))
                image.load()
            except Exception as exc:  # any decoder failure (a bomb warning here too), as above
                raise _undecodable() from exc
            mime, extension = ACCEPTED_IMAGES[fmt]
            return ImageInfo(mime_type=mime, extension=extension, width=width, height=height)


def _too_many_pixels(max_pixels: int) -> Unprocessable:
    return Unprocessable(
        f"The image has more than {max_pixels} pixels (decompression-bomb limit).",
        code="image_too_large",
        field="file",
    )


def _undecodable(detail: str = "The image is damaged or truncated and does not decode.") -> Unprocessable:
    return Unprocessable(detail, code="image_undecodable", field="file")
