"""PDF pages rendered as PNG images (what a vision model without native PDF reading sees of a scanned
page), made once per stored document, page and size, and kept as derived objects beside its page texts:
``derived/documents/{uuid}/pages/{edge}px/{page}.png``. Every later turn of the conversation, in any
process, sends the same bytes without starting the PDF worker again. The render size is in the key,
so a model with another edge limit never gets a page made for a different one.

A PDF sent inline (never stored) is rendered for its request only.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from iris.app.media import documents
from iris.app.media.documents import DEFAULT_WORKER_MEMORY_BYTES
from iris.app.media.uploads import derived_base
from iris.app.storage.base import ObjectNotFound, Storage, StorageError

log = logging.getLogger("iris.media")


def page_image_path(document_path: str, page: int, edge_px: int) -> str:
    """Where page ``page`` (1-based) of the stored PDF at ``document_path``, rendered to ``edge_px`` on
    its longest edge, is kept."""
    return f"{derived_base(document_path)}/pages/{edge_px}px/{page}.png"


async def page_pngs(
    storage: Storage,
    document_path: str,
    load: Callable[[], Awaitable[bytes]],
    pages: Sequence[int],
    *,
    edge_px: int,
    timeout: float,  # noqa: ASYNC109 - the worker's deadline, not the caller's
    memory_bytes: int = DEFAULT_WORKER_MEMORY_BYTES,
) -> dict[int, bytes]:
    """PNGs of ``pages`` (1-based): those already kept are read, the others rendered in one worker job
    from the PDF's bytes (``load``: read only when something is missing) and kept. ``document_path``
    empty: a PDF that was never stored, rendered and not kept. Errors as
    :func:`iris.app.media.documents.render_pdf_pages`."""
    found: dict[int, bytes] = {}
    if document_path:
        for page in pages:
            try:
                found[page] = await storage.read(page_image_path(document_path, page, edge_px))
            except ObjectNotFound:
                continue
    missing = [page for page in pages if page not in found]
    if not missing:
        return found
    rendered = await documents.render_pdf_pages(
        await load(),
        [page - 1 for page in missing],
        max_edge_px=edge_px,
        timeout=timeout,
        memory_bytes=memory_bytes,
    )
    for page, png in zip(missing, rendered, strict=True):
        found[page] = png
        if document_path:
            await _keep(storage, page_image_path(document_path, page, edge_px), png)
    return {page: found[page] for page in pages}


async def _keep(storage: Storage, path: str, png: bytes) -> None:
    try:
        await storage.put(path, _once(png), content_type="image/png")
    except StorageError as exc:
        # Another process may have kept the same page first (the same bytes: PDFium renders a page
        # deterministically), or storage is failing: this turn has its page; only the caching is lost.
        log.info("rendered page %s not kept: %s", path, exc)


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data
