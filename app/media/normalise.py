"""Turn a kept original into what a model takes (pure and blocking: run it in a worker thread).

EXIF orientation applied, metadata stripped, transcoded to an accepted type, downscaled to the
recommended long edge, then re-encoded (lower quality, then smaller) until the *encoded* size — raw
or base64, as the vendor measures it — fits the target, and is never larger than the original: a
photo saved at quality 80 re-encoded at 90 grows, so 90 is skipped for it.
"""

from __future__ import annotations

import io
import math

import msgspec
from PIL import Image, ImageOps

from iris.app.mime import ACCEPTED_IMAGES

_FORMAT_BY_MIME = {mime: fmt for fmt, (mime, _) in ACCEPTED_IMAGES.items()}
_QUALITIES = (90, 82, 72, 60, 45)
_PNG_LEVELS = (6, 9)  # zlib effort: 9 (with optimize) only when 6 is not small enough
_ORIENTATION = 0x0112
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_PIXEL_CHUNKS = {b"IHDR", b"PLTE", b"tRNS", b"IDAT", b"IEND"}
_SHRINK = 0.75
_MIN_EDGE = 64


class Target(msgspec.Struct, frozen=True, kw_only=True):
    """What the model takes: accepted types, the size limit and how it is measured, edge limits."""

    mime_types: tuple[str, ...]
    max_bytes: int
    measured_on: str = "raw"
    recommended_long_edge_px: int | None = None
    max_edge_px: int | None = None

    @property
    def key(self) -> str:
        """A stable name for this target, used to cache the variant it produces."""
        types = "+".join(sorted(m.split("/")[-1] for m in self.mime_types))
        edge = self.recommended_long_edge_px or self.max_edge_px or 0
        return f"{types}-{self.max_bytes}{self.measured_on[0]}-{edge}-v2"  # v2: never above the original


class Normalised(msgspec.Struct, frozen=True, kw_only=True):
    data: bytes
    mime_type: str
    width: int
    height: int


class CannotFit(ValueError):
    """No accepted type, or the image cannot be made small enough."""


def measured(size: int, measured_on: str) -> int:
    """The size as the vendor counts it (base64 inflates by 4/3)."""
    return 4 * math.ceil(size / 3) if measured_on == "base64" else size


def choose_mime(source_mime: str, has_alpha: bool, accepted: tuple[str, ...]) -> str:
    """Keep the source type when accepted; else PNG for alpha or lossless sources, JPEG for photos."""
    if source_mime in accepted:
        return source_mime
    preferences = ("image/png", "image/webp", "image/jpeg")
    if source_mime == "image/jpeg" and not has_alpha:
        preferences = ("image/jpeg", "image/webp", "image/png")
    for mime in preferences:
        if mime in accepted:
            return mime
    raise CannotFit(
        f"the model accepts none of PNG, JPEG, WebP (it takes {', '.join(accepted) or 'no images'})"
    )


def normalise(original: bytes, target: Target) -> Normalised:
    """The variant of ``original`` for ``target``."""
    with Image.open(io.BytesIO(original)) as opened:
        source_mime = (
            ACCEPTED_IMAGES[opened.format or "PNG"][0] if opened.format in ACCEPTED_IMAGES else "image/png"
        )
        # 8-bit, upright: the original's own encoding could go as it is
        plain = opened.getexif().get(_ORIENTATION, 1) == 1 and opened.mode in ("RGB", "RGBA", "L", "LA", "P")
        image = ImageOps.exif_transpose(opened)
        image.load()
    has_alpha = image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info)
    mime = choose_mime(source_mime, has_alpha, target.mime_types)
    fmt = _FORMAT_BY_MIME[mime]
    image = _mode_for(image, fmt, has_alpha)
    # EXIF, XMP, ICC, text chunks: none of it goes to the vendor (a palette's transparency is pixels).
    image.info = {k: v for k, v in image.info.items() if k == "transparency" and image.mode == "P"}

    limit = min(e for e in (target.recommended_long_edge_px, target.max_edge_px, 1 << 16) if e)
    if max(image.size) > limit:
        image = _resized(image, limit / max(image.size))
    elif mime == source_mime == "image/png" and plain:
        # A PNG that needs no pixel change can keep its own encoding, metadata chunks removed: our zlib
        # settings would not beat every encoder, and losing pixels to save a few bytes is no trade.
        stripped = _stripped_png(original)
        if measured(len(stripped), target.measured_on) <= target.max_bytes:
            return Normalised(data=stripped, mime_type=mime, width=image.width, height=image.height)

    ceiling = len(original)  # raw bytes, whatever the vendor measures
    smallest: Normalised | None = None
    while True:
        for setting in _QUALITIES if fmt in ("JPEG", "WEBP") else _PNG_LEVELS:
            data = _encode(image, fmt, setting)
            if measured(len(data), target.measured_on) > target.max_bytes:
                continue
            variant = Normalised(data=data, mime_type=mime, width=image.width, height=image.height)
            if len(data) <= ceiling:
                return variant
            if smallest is None or len(data) < len(smallest.data):
                smallest = variant
        if min(image.size) * _SHRINK < _MIN_EDGE:
            if smallest is not None:  # already tiny: a few bytes over the original beat a blurred image
                return smallest
            raise CannotFit(f"cannot get the image under {target.max_bytes} bytes")
        image = _resized(image, _SHRINK)


def _stripped_png(original: bytes) -> bytes:
    """The PNG with only the chunks that make its pixels (no text, EXIF, ICC, time): never larger."""
    out = [_PNG_SIGNATURE]
    at = len(_PNG_SIGNATURE)
    while at + 12 <= len(original):
        length = int.from_bytes(original[at : at + 4], "big")
        end = at + 12 + length
        if original[at + 4 : at + 8] in _PNG_PIXEL_CHUNKS:
            out.append(original[at:end])
        at = end
    return b"".join(out)


def _mode_for(image: Image.Image, fmt: str, has_alpha: bool) -> Image.Image:
    if fmt == "JPEG":
        if has_alpha:  # JPEG has no alpha: flatten on white rather than on black
            background = Image.new("RGB", image.size, (255, 255, 255))
            background.paste(image.convert("RGBA"), mask=image.convert("RGBA").getchannel("A"))
            return background
        return image.convert("RGB") if image.mode != "RGB" else image
    if image.mode == "P" and fmt == "PNG":
        return image  # a palette PNG stays one: converting it to RGB would only make it bigger
    if image.mode not in ("RGB", "RGBA", "L", "LA"):
        return image.convert("RGBA" if has_alpha else "RGB")
    return image


def _resized(image: Image.Image, factor: float) -> Image.Image:
    if image.mode == "P":  # resample true colours, not palette indexes
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    size = (max(1, round(image.width * factor)), max(1, round(image.height * factor)))
    return image.resize(size, Image.Resampling.LANCZOS)


def _encode(image: Image.Image, fmt: str, setting: int) -> bytes:
    """``setting`` is the quality for JPEG/WebP and the zlib level for PNG."""
    buffer = io.BytesIO()
    if fmt == "PNG":
        image.save(buffer, "PNG", optimize=setting >= 9, compress_level=setting)
    elif fmt == "JPEG":
        image.save(buffer, "JPEG", quality=setting, optimize=True, progressive=False)
    else:
        image.save(buffer, "WEBP", quality=setting, method=4)
    return buffer.getvalue()
