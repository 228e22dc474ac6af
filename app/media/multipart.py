"""A streaming ``multipart/form-data`` reader for uploads.

Litestar's own form parsing reads the whole body into memory; this one spools the single file
part to a temporary file chunk by chunk (hashing and counting as it goes) and stops reading the
moment the file passes its limit, so a 5 MB upload never sits whole in memory and an oversized
one is refused without being received.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterable
from pathlib import Path

import anyio
import msgspec
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from iris.app.errors import BadRequest, PayloadTooLarge, Unprocessable, UnsupportedMediaType

MAX_FIELD_BYTES = 1024
MAX_PARTS = 8


class SpooledFile(msgspec.Struct, kw_only=True):
    """The file part, on disk: where, how big, its SHA-256 and what the client called it."""

    path: Path
    size: int
    sha256: str
    filename: str
    declared_type: str


class UploadForm(msgspec.Struct, kw_only=True):
    """Text fields and the one file of an upload form."""

    fields: dict[str, str]
    file: SpooledFile | None


class _PartState:
    """What the parser callbacks learn about the current part (they are synchronous)."""

    def __init__(self) -> None:
        self.headers: dict[bytes, bytes] = {}
        self.header_field = b""
        self.header_value = b""
        self.name: str | None = None
        self.filename: str | None = None
        self.content_type = ""
        self.is_file = False
        self.field_value = bytearray()


def multipart_boundary(content_type: str | None) -> bytes:
    """The boundary of a ``multipart/form-data`` content type, or 415."""
    kind, options = parse_options_header(content_type or "")
    boundary = options.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise UnsupportedMediaType(
            "Send the file as multipart/form-data with a 'file' field.", code="multipart_required"
        )
    return boundary


class _FormParser:
    """The parser's callbacks over one form: the fields so far, the file part's bytes not yet spooled
    (with its size and digest), and the first error, raised by the reader after the chunk that caused it
    (the callbacks are synchronous and run inside ``MultipartParser.write``)."""

    def __init__(self, *, file_field: str, max_file_bytes: int) -> None:
        self.file_field = file_field
        self.max_file_bytes = max_file_bytes
        self.fields: dict[str, str] = {}
        self.digest = hashlib.sha256()
        self.size = 0
        self.pending: list[bytes] = []
        self.state = _PartState()
        self.parts = 0
        self.file_meta: tuple[str, str] | None = None
        self.error: Exception | None = None

    def parser(self, boundary: bytes) -> MultipartParser:
        """A parser that reports to this object."""
        return MultipartParser(
            boundary,
            {
                "on_part_begin": self.on_part_begin,
                "on_header_field": self.on_header_field,
                "on_header_value": self.on_header_value,
                "on_header_end": self.on_header_end,
                "on_headers_finished": self.on_headers_finished,
                "on_part_data": self.on_part_data,
                "on_part_end": self.on_part_end,
            },
        )

    def on_part_begin(self) -> None:
        self.parts += 1
        self.state = _PartState()

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self.state.header_field += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self.state.header_value += data[start:end]

    def on_header_end(self) -> None:
        state = self.state
        state.headers[state.header_field.lower()] = state.header_value
        state.header_field, state.header_value = b"", b""

    def on_headers_finished(self) -> None:
        state, file_field = self.state, self.file_field
        _, options = parse_options_header(state.headers.get(b"content-disposition", b""))
        state.name = options.get(b"name", b"").decode("utf-8", "replace") or None
        raw_filename = options.get(b"filename")
        state.is_file = raw_filename is not None
        state.filename = raw_filename.decode("utf-8", "replace") if raw_filename is not None else None
        state.content_type = state.headers.get(b"content-type", b"").decode("latin-1")
        if state.is_file and state.name != file_field:
            self.error = Unprocessable(
                f"Only one file, in the '{file_field}' field, is accepted.",
                code="unexpected_file",
                field=state.name,
            )
        elif state.is_file and self.file_meta is not None:
            self.error = Unprocessable("Send one image per upload.", code="too_many_files", field=file_field)

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        state = self.state
        chunk = data[start:end]
        if state.is_file:
            self.size += len(chunk)
            if self.size > self.max_file_bytes:
                self.error = PayloadTooLarge(
                    f"The file is larger than the {self.max_file_bytes}-byte limit.",
                    code="file_too_large",
                    field=self.file_field,
                )
                return
            self.digest.update(chunk)
            self.pending.append(chunk)
        else:
            state.field_value += chunk
            if len(state.field_value) > MAX_FIELD_BYTES:
                self.error = Unprocessable("A form field is too long.", field=state.name)

    def on_part_end(self) -> None:
        state = self.state
        if state.is_file:
            self.file_meta = (state.filename or "", state.content_type)
        elif state.name is not None:
            self.fields[state.name] = state.field_value.decode("utf-8", "replace")


async def read_upload_form(
    body: AsyncIterable[bytes],
    *,
    boundary: bytes,
    file_field: str,
    max_file_bytes: int,
    spool_dir: Path,
) -> UploadForm:
    """Parse the form, spooling ``file_field`` to ``spool_dir``; the caller deletes the file."""
    await anyio.Path(spool_dir).mkdir(parents=True, exist_ok=True)
    spool_path = spool_dir / f"upload-{uuid.uuid4().hex}.part"
    form = _FormParser(file_field=file_field, max_file_bytes=max_file_bytes)
    try:
        await _spool(body, form, form.parser(boundary), spool_path)
    except BaseException:
        await anyio.Path(spool_path).unlink(missing_ok=True)
        raise
    if form.file_meta is None:
        await anyio.Path(spool_path).unlink(missing_ok=True)
        return UploadForm(fields=form.fields, file=None)
    filename, declared = form.file_meta
    return UploadForm(
        fields=form.fields,
        file=SpooledFile(
            path=spool_path,
            size=form.size,
            sha256=form.digest.hexdigest(),
            filename=filename,
            declared_type=declared,
        ),
    )


async def _spool(
    body: AsyncIterable[bytes], form: _FormParser, parser: MultipartParser, spool_path: Path
) -> None:
    """Feed ``body`` to the parser chunk by chunk, writing the file part's bytes to ``spool_path`` and
    stopping at the first error or at too many parts."""
    async with await anyio.open_file(spool_path, "wb") as spool:
        async for chunk in body:
            try:
                parser.write(chunk)
            except MultipartParseError as exc:
                raise BadRequest("The multipart body is malformed.", code="malformed_body") from exc
            if form.error is not None:
                raise form.error
            if form.parts > MAX_PARTS:
                raise Unprocessable("The form has too many parts.", code="too_many_parts")
            for piece in form.pending:
                await spool.write(piece)
            form.pending.clear()
        parser.finalize()
