"""What a PDF holds (page count, page texts, a first-page thumbnail) and its pages as images, learned in
a child process (:mod:`iris.app.media.pdf_worker`) bounded in time and memory.

A PDF bomb, a file that sends PDFium into a loop or one that exhausts the worker's memory ends as 422
``document_undecodable``; the service process never runs PDFium and never waits past ``timeout``.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Sequence

import msgspec

from iris.app.errors import Unprocessable
from iris.app.media.pdf_worker import Answer, Inspected, InspectJob, Job, Refused, Rendered, RenderJob

DEFAULT_WORKER_MEMORY_BYTES = 1024 * 1024 * 1024
"""The worker's address-space cap: an interpreter with PDFium loaded, a 32 MiB PDF and its decoded
pages fit; a decompression bomb does not."""
THUMBNAIL_EDGE_PX = 256
"""The longest edge of the first-page thumbnail."""


class PdfFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What an accepted PDF holds: its page count, each page's text (``""`` for a page of images
    only) and a PNG of its first page (``None`` when none was asked for)."""

    pages: int
    page_texts: tuple[str, ...]
    thumbnail_png: bytes | None


def _undecodable(detail: str) -> Unprocessable:
    return Unprocessable(detail, code="document_undecodable", field="file")


async def _in_worker(job: Job, timeout: float) -> Answer:  # noqa: ASYNC109 - the deadline kills the child
    """Run ``job`` in a fresh worker; kill it at ``timeout``. Every failure is a 422."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "iris.app.media.pdf_worker",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        async with asyncio.timeout(timeout):
            out, _ = await process.communicate(msgspec.msgpack.encode(job))
    except TimeoutError:
        raise _undecodable(
            f"The PDF took longer than {timeout:g} s to read and was given up (it may be built to exhaust"
            " a reader)."
        ) from None
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
    if process.returncode != 0:
        raise _undecodable(
            "The PDF could not be read within the reader's memory limit, or it crashed the reader."
        )
    try:
        answer: Answer = msgspec.msgpack.decode(out, type=Answer)  # a union: msgspec's stub says Any
    except msgspec.DecodeError as exc:  # pragma: no cover - only a broken worker writes this
        raise _undecodable("The PDF reader gave no usable answer.") from exc
    return answer


def _raise_refused(answer: Answer) -> None:
    if isinstance(answer, Refused):
        raise Unprocessable(answer.detail, code=answer.code, field="file")


async def inspect_pdf(
    data: bytes,
    *,
    max_pages: int,
    timeout: float,  # noqa: ASYNC109 - the worker's deadline, not the caller's
    memory_bytes: int = DEFAULT_WORKER_MEMORY_BYTES,
    thumbnail_edge_px: int = THUMBNAIL_EDGE_PX,
) -> PdfFacts:
    """Open ``data`` as a PDF: 422 ``document_encrypted`` when it needs a user password (an owner
    password alone does not count), ``document_too_many_pages`` past ``max_pages`` (checked before
    any page is read), ``document_undecodable`` when it does not open within ``timeout`` and
    ``memory_bytes``. ``thumbnail_edge_px=0`` skips the thumbnail."""
    job = InspectJob(
        data=data, memory_bytes=memory_bytes, max_pages=max_pages, thumbnail_edge_px=thumbnail_edge_px
    )
    answer = await _in_worker(job, timeout)
    _raise_refused(answer)
    if not isinstance(answer, Inspected):  # pragma: no cover - the worker answers its job's kind
        raise _undecodable("The PDF reader answered another job.")
    return PdfFacts(pages=answer.pages, page_texts=answer.page_texts, thumbnail_png=answer.thumbnail_png)


async def render_pdf_pages(
    data: bytes,
    pages: Sequence[int],
    *,
    max_edge_px: int,
    timeout: float,  # noqa: ASYNC109 - the worker's deadline, not the caller's
    memory_bytes: int = DEFAULT_WORKER_MEMORY_BYTES,
) -> list[bytes]:
    """PNG images of ``pages`` (0-based) of ``data``, each at most ``max_edge_px`` on its longest edge:
    what a vision model without native PDF reading sees of a page without text. Errors as
    :func:`inspect_pdf`; a page out of range is ``document_undecodable``."""
    if not pages:
        return []
    job = RenderJob(data=data, memory_bytes=memory_bytes, pages=tuple(pages), max_edge_px=max_edge_px)
    answer = await _in_worker(job, timeout)
    _raise_refused(answer)
    if not isinstance(answer, Rendered):  # pragma: no cover - the worker answers its job's kind
        raise _undecodable("The PDF reader answered another job.")
    return list(answer.images)
