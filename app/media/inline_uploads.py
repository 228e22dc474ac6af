"""Documents and audio a run's request carries inline (an AG-UI ``document``/``audio`` part with a
``data`` source, or a legacy ``binary`` part with ``data``), and images where the surface takes them
inline (the AI SDK's ``data:`` URLs, ``images=True``): checked exactly as ``POST /api/files`` checks an
upload, then stored as an upload of the run's thread, so history, replay and later turns treat them
like any uploaded file.

The checks come first and store nothing: the base64 is refused by its length before it is decoded
(then decoded and hashed in a worker thread, so a 45 MB payload never holds the event loop), the kind
is sniffed from the bytes (the declared ``mimeType`` must be what they are), and the PDF
worker or the audio parser reads them within the upload limits. Only once the whole run is accepted
does the intake count them against the caller's upload quotas (:meth:`InlineUploads.admit`, in the
intake's transaction) and store them (:meth:`InlineUploads.store`): objects first, their rows added
to the intake's transaction. A run refused or not committed after that removes the objects again
(:meth:`InlineUploads.discard`), so no half state is left: no row without its object, and no object
without its row.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import anyio
from uuid_utils.compat import uuid7

from iris.app.agui.input import InboundAttachment
from iris.app.errors import IrisError, Unprocessable
from iris.app.media.base64_data import decode_base64_off_loop
from iris.app.media.documents import PdfFacts
from iris.app.media.images import inspect_image
from iris.app.media.uploads import (
    SNIFF_BYTES,
    Facts,
    clean_filename,
    derived_paths,
    inspect_bytes,
    once,
    remove_objects,
    sniff,
    store_derived,
    upload_path,
)
from iris.app.mime import UPLOAD_EXTENSION_BY_MIME
from iris.app.persistence.models import Upload
from iris.app.persistence.repositories import UploadRepository
from iris.app.security.auth import Principal
from iris.app.security.quotas import Db, admit_upload
from iris.app.settings import Settings
from iris.app.storage.base import Storage

_NOUN = {"document": "PDF", "audio": "audio file", "image": "image"}


@dataclass(frozen=True, slots=True)
class _Pending:
    upload: Upload
    data: bytes
    pdf: PdfFacts | None


class InlineUploads:
    """One run intake's inline documents and audio: checked by :meth:`take`, then counted, stored and
    (when the run is not stored after all) removed again."""

    def __init__(
        self, storage: Storage, limiter: anyio.CapacityLimiter, settings: Settings, *, images: bool = False
    ) -> None:
        self.images = images
        self._storage = storage
        self._limiter = limiter
        self._settings = settings
        self._pending: list[_Pending] = []
        self._stored: list[str] = []

    async def take(self, part: InboundAttachment, *, user_id: str, thread_id: str) -> Upload:
        """Check ``part``'s bytes as an upload's are; the upload row they will be (not added yet)."""
        if part.data is None or (part.kind == "image" and not self.images):
            raise ValueError("only a part with data is taken inline (an image only where images are)")
        kind = part.kind
        settings = self._settings
        limit = {
            "document": settings.max_document_bytes,
            "audio": settings.max_audio_bytes,
            "image": settings.max_image_bytes,
        }[kind]
        data = await decode_base64_off_loop(
            part.data,
            max_bytes=limit,
            field=part.field,
            noun=_NOUN[kind],
            invalid_code="invalid_base64",
            limiter=self._limiter,
        )
        declared = (part.mime_type or "").lower()
        try:
            found = sniff(data[:SNIFF_BYTES])
            if found != kind:
                raise _lying(declared, f"a {found} file", part.field)
            if kind == "image":
                data, facts = await self._image(data)
            else:
                facts = await inspect_bytes(data, kind, settings, self._limiter)
        except IrisError as exc:
            exc.field = part.field
            raise
        if facts.mime_type != declared:
            raise _lying(declared, facts.mime_type, part.field)
        sha256 = await anyio.to_thread.run_sync(_sha256, data, limiter=self._limiter)
        extension = UPLOAD_EXTENSION_BY_MIME[facts.mime_type]
        path = upload_path(user_id, thread_id, extension)
        thumbnail_path, text_path = derived_paths(path) if facts.pdf is not None else (None, None)
        upload = Upload(
            id=uuid7(),
            owner_id=user_id,
            thread_id=thread_id,
            bucket=self._storage.bucket,
            path=path,
            mime_type=facts.mime_type,
            name=clean_filename(part.filename or "", extension),
            size=len(data),
            width=facts.width,
            height=facts.height,
            sha256=sha256,
            pages=facts.pages,
            duration_seconds=facts.duration_seconds,
            thumbnail_path=thumbnail_path if facts.pdf and facts.pdf.thumbnail_png is not None else None,
            text_path=text_path,
        )
        self._pending.append(_Pending(upload=upload, data=data, pdf=facts.pdf))
        return upload

    async def _image(self, data: bytes) -> tuple[bytes, Facts]:
        """An image decoded as an upload's is (a PNG damaged only in optional chunks kept without them)."""
        max_pixels = self._settings.max_image_pixels
        image = await anyio.to_thread.run_sync(
            lambda: inspect_image(data, max_pixels=max_pixels), limiter=self._limiter
        )
        kept = image.repaired if image.repaired is not None else data
        return kept, Facts(mime_type=image.mime_type, width=image.width, height=image.height)

    async def admit(self, db: Db, principal: Principal) -> None:
        """Count each inline file against the caller's upload quotas, in the intake's transaction (a
        refusal — 429 ``quota_exceeded`` — rolls the count back with the rest of the run)."""
        for pending in self._pending:
            await admit_upload(db, principal, self._settings, pending.upload.size)

    async def store(self, uploads: UploadRepository) -> None:
        """Store each object (and a PDF's thumbnail and page texts), then add its row to the intake's
        transaction. What was stored is remembered for :meth:`discard`."""
        for pending in self._pending:
            upload = pending.upload
            self._stored.append(upload.path)
            await self._storage.put(upload.path, once(pending.data), content_type=upload.mime_type)
            if pending.pdf is not None:
                self._stored += [p for p in (upload.text_path, upload.thumbnail_path) if p]
                await store_derived(self._storage, upload.path, pending.pdf)
            uploads.add_unflushed(upload)
        self._pending.clear()  # the bytes are in storage now; the run reads them from there

    async def discard(self) -> None:
        """Remove every object :meth:`store` stored: the run that carried them was not stored."""
        stored, self._stored = self._stored, []
        await remove_objects(self._storage, stored)


def _sha256(data: bytes) -> str:
    """The hex digest (``hashlib`` lets go of the GIL while it hashes: in a thread, the loop runs on)."""
    return hashlib.sha256(data).hexdigest()


def _lying(declared: str, found: str, field: str) -> Unprocessable:
    return Unprocessable(
        f"The part says {declared!r} but its bytes are {found}: send the type the file is.",
        code="unsupported_media_type",
        field=field,
    )
