"""The media types Iris accepts and their file extensions: one table shared by the AG-UI wire layer,
uploads, the variant cache and the storage route, so none of them imports another for it."""

from __future__ import annotations

# Pillow format -> (mime type, file extension). The only image types Iris accepts.
ACCEPTED_IMAGES: dict[str, tuple[str, str]] = {
    "PNG": ("image/png", "png"),
    "JPEG": ("image/jpeg", "jpg"),
    "WEBP": ("image/webp", "webp"),
}
# Documents and audio users may upload (sniffed from the bytes): mime type -> file extension.
ACCEPTED_DOCUMENTS: dict[str, str] = {"application/pdf": "pdf"}
ACCEPTED_AUDIO: dict[str, str] = {"audio/wav": "wav", "audio/mpeg": "mp3"}
AUDIO_FORMAT_BY_MIME: dict[str, str] = {"audio/wav": "wav", "audio/mpeg": "mp3"}
"""The format names vendors use for accepted audio (OpenAI's ``input_audio.format``)."""

MIME_BY_EXTENSION = {ext: mime for mime, ext in ACCEPTED_IMAGES.values()}
EXTENSION_BY_MIME = dict(ACCEPTED_IMAGES.values())
"""Images only: the AG-UI image part and the variant cache look types up here."""
UPLOAD_EXTENSION_BY_MIME = {**EXTENSION_BY_MIME, **ACCEPTED_DOCUMENTS, **ACCEPTED_AUDIO}
"""Everything ``POST /api/files`` takes."""

# Audio a tool may return, stored as it came (never decoded): mime type -> file extension.
AUDIO_EXTENSIONS: dict[str, str] = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/mpeg": "mp3",
    "audio/ogg": "ogg",
    "audio/webm": "weba",
    "audio/flac": "flac",
    "audio/mp4": "m4a",
}
SERVED_BY_EXTENSION = {
    **MIME_BY_EXTENSION,
    **{ext: mime for mime, ext in ACCEPTED_DOCUMENTS.items()},
    **{ext: mime for mime, ext in reversed(AUDIO_EXTENSIONS.items())},  # the first type of an extension wins
}
"""What the local storage route answers each stored extension with (images, documents, and audio)."""
