"""PDFs read in the bounded PDFium worker: what it learns, and how hostile files end (always a 422)."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from iris.app.errors import Unprocessable
from iris.app.media.documents import DEFAULT_WORKER_MEMORY_BYTES, inspect_pdf, render_pdf_pages
from tests.support.documents import IMAGE_CONTENT, bomb_pdf, build_pdf, many_pages_pdf, text_content, text_pdf

TIMEOUT = 30.0


async def refused(data: bytes, code: str, **kwargs: float) -> str:
    with pytest.raises(Unprocessable) as caught:
        await inspect_pdf(
            data, max_pages=int(kwargs.pop("max_pages", 100)), timeout=kwargs.pop("timeout", TIMEOUT)
        )
    assert caught.value.code == code, caught.value.detail
    assert caught.value.status_code == 422
    return caught.value.detail


async def test_pages_texts_and_a_first_page_thumbnail() -> None:
    facts = await inspect_pdf(
        text_pdf(["Quarterly report\nRevenue grew", "Second page"]), max_pages=100, timeout=TIMEOUT
    )
    assert facts.pages == 2
    assert facts.page_texts[0].split() == ["Quarterly", "report", "Revenue", "grew"]
    assert facts.page_texts[1] == "Second page"
    assert facts.thumbnail_png is not None
    with Image.open(io.BytesIO(facts.thumbnail_png)) as thumb:
        assert thumb.format == "PNG"
        assert max(thumb.size) == 256
        assert thumb.size[0] < thumb.size[1]  # a portrait Letter page stays portrait


async def test_compressed_content_is_read() -> None:
    facts = await inspect_pdf(text_pdf(["deflated words"], compress=True), max_pages=100, timeout=TIMEOUT)
    assert facts.page_texts == ("deflated words",)


async def test_a_scanned_like_page_has_no_text() -> None:
    facts = await inspect_pdf(
        build_pdf([IMAGE_CONTENT, text_content(["typed"])]), max_pages=10, timeout=TIMEOUT
    )
    assert facts.page_texts == ("", "typed")


async def test_a_user_password_is_encrypted() -> None:
    detail = await refused(text_pdf(["secret"], user_password="hunter2"), "document_encrypted")
    assert "password" in detail


async def test_an_owner_password_alone_reads_like_any_pdf() -> None:
    facts = await inspect_pdf(text_pdf(["readable anyway"], user_password=""), max_pages=100, timeout=TIMEOUT)
    assert facts.page_texts == ("readable anyway",)


@pytest.mark.parametrize(
    "data",
    [
        b"%PDF-1.7\nnothing else",
        text_pdf(["cut short"])[:60],
        b"\x00" * 2048,
        b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n",
    ],
    ids=["header-only", "truncated", "zeros", "no-pages"],
)
async def test_broken_files_are_undecodable(data: bytes) -> None:
    await refused(data, "document_undecodable")


async def test_too_many_pages_is_refused_before_reading_them() -> None:
    detail = await refused(many_pages_pdf(3000), "document_too_many_pages", max_pages=100)
    assert "3000 pages" in detail
    assert "100" in detail


async def test_exactly_the_page_limit_is_accepted() -> None:
    facts = await inspect_pdf(many_pages_pdf(100), max_pages=100, timeout=TIMEOUT, thumbnail_edge_px=0)
    assert facts.pages == 100
    assert facts.thumbnail_png is None


async def test_a_flate_bomb_ends_at_the_memory_cap() -> None:
    # 2 GiB of spaces in one content stream: reading the page's text inflates it past the worker's cap.
    bomb = bomb_pdf(2 * DEFAULT_WORKER_MEMORY_BYTES)
    assert len(bomb) < 16 * 1024 * 1024
    detail = await refused(bomb, "document_undecodable")
    assert "memory" in detail


async def test_a_worker_past_its_deadline_is_killed() -> None:
    detail = await refused(text_pdf(["slow enough"]), "document_undecodable", timeout=0.001)
    assert "longer than" in detail


async def test_pages_render_within_the_edge() -> None:
    data = build_pdf([IMAGE_CONTENT, text_content(["two"]), IMAGE_CONTENT])
    images = await render_pdf_pages(data, [0, 2], max_edge_px=800, timeout=TIMEOUT)
    assert len(images) == 2
    for png in images:
        with Image.open(io.BytesIO(png)) as page:
            assert page.format == "PNG"
            assert max(page.size) == 800


async def test_rendering_a_missing_page_is_refused() -> None:
    with pytest.raises(Unprocessable) as caught:
        await render_pdf_pages(text_pdf(["one"]), [1], max_edge_px=100, timeout=TIMEOUT)
    assert caught.value.code == "document_undecodable"
