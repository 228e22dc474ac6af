"""The media types Iris accepts and their file extensions: one table shared by the AG-UI wire layer,
uploads, the variant cache and the storage route, so none of them imports another for it."""

from __future__ import annotations

# Pillow format -> (mime type, file extension). The only image types Iris accepts.
ACCEPTED_IMAGES: dict[str, tuple[str, str]] = {
    "PNG": ("image/png", "png"),
    "JPEG": ("image/jpeg", "jpg"),
    "WEBP": ("image/webp", "webp"),
}
MIME_BY_EXTENSION = {ext: mime for mime, ext in ACCEPTED_IMAGES.values()}
EXTENSION_BY_MIME = dict(ACCEPTED_IMAGES.values())
