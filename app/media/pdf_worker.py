"""The PDF worker process: PDFium (pypdfium2) opens a PDF here, never in the service process.

PDFium is not thread-safe and a thread cannot be stopped, so :mod:`iris.app.media.documents` starts this
module as a child process per job, caps its address space (``RLIMIT_AS``) and kills it at its
deadline. It reads one msgpack :class:`Job` from stdin and writes one msgpack :data:`Answer` to
stdout; it imports nothing of Iris but this module, so a crash here is only ever a refused file.
"""

from __future__ import annotations

import io
import resource
import sys
from typing import Literal

import msgspec

MAX_PAGE_TEXT_CHARS = 100_000
"""Text kept per page: more than any real page holds, far less than a hostile one could claim."""


class Job(msgspec.Struct, frozen=True, kw_only=True, tag_field="op"):
    """What to do with ``data``: ``inspect`` (count, text, thumbnail) or ``render`` (page images)."""

    data: bytes
    memory_bytes: int


class InspectJob(Job, frozen=True, kw_only=True, tag="inspect"):
    max_pages: int
    thumbnail_edge_px: int


class RenderJob(Job, frozen=True, kw_only=True, tag="render"):
    pages: tuple[int, ...]
    max_edge_px: int


class Inspected(msgspec.Struct, frozen=True, kw_only=True, tag="inspected"):
    pages: int
    page_texts: tuple[str, ...]
    thumbnail_png: bytes | None


class Rendered(msgspec.Struct, frozen=True, kw_only=True, tag="rendered"):
    images: tuple[bytes, ...]


class Refused(msgspec.Struct, frozen=True, kw_only=True, tag="refused"):
    """The PDF is not one Iris reads; ``code`` is the Iris error code."""

    code: Literal["document_encrypted", "document_undecodable", "document_too_many_pages"]
    detail: str


Answer = Inspected | Rendered | Refused


def _png(page: object, max_edge_px: int) -> bytes:
    import pypdfium2 as pdfium

    assert isinstance(page, pdfium.PdfPage)
    width, height = page.get_size()  # points
    longest = max(width, height, 1.0)
    bitmap = page.render(scale=max_edge_px / longest, may_draw_forms=False)
    out = io.BytesIO()
    bitmap.to_pil().save(out, format="PNG", optimize=False)
    return out.getvalue()


def run(job: InspectJob | RenderJob) -> Answer:
    """Do the job; PDFium's own refusals become :class:`Refused`, anything else propagates."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    try:
        pdf = pdfium.PdfDocument(job.data)
    except pdfium.PdfiumError as exc:
        if exc.err_code == pdfium_c.FPDF_ERR_PASSWORD:
            return Refused(code="document_encrypted", detail="The PDF needs a password to open.")
        return Refused(code="document_undecodable", detail="The PDF is damaged and does not open.")
    pages = len(pdf)
    if isinstance(job, RenderJob):
        if any(not 0 <= p < pages for p in job.pages):
            return Refused(code="document_undecodable", detail=f"The PDF has {pages} pages.")
        return Rendered(images=tuple(_png(pdf[p], job.max_edge_px) for p in job.pages))
    if pages == 0:
        return Refused(code="document_undecodable", detail="The PDF has no pages.")
    if pages > job.max_pages:
        return Refused(
            code="document_too_many_pages",
            detail=f"The PDF has {pages} pages; at most {job.max_pages} are accepted.",
        )
    texts = []
    for index in range(pages):
        textpage = pdf[index].get_textpage()
        texts.append(textpage.get_text_bounded()[:MAX_PAGE_TEXT_CHARS])
    thumbnail = _png(pdf[0], job.thumbnail_edge_px) if job.thumbnail_edge_px else None
    return Inspected(pages=pages, page_texts=tuple(texts), thumbnail_png=thumbnail)


def main() -> None:
    job = msgspec.msgpack.decode(sys.stdin.buffer.read(), type=InspectJob | RenderJob)
    import PIL.PngImagePlugin  # noqa: F401  (loaded before the cap, like PDFium itself)
    import pypdfium2  # noqa: F401

    # Only now, with the job read: from here on PDFium may grow the heap to this much and no more.
    resource.setrlimit(resource.RLIMIT_AS, (job.memory_bytes, job.memory_bytes))
    answer = run(job)
    sys.stdout.buffer.write(msgspec.msgpack.encode(answer))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
