"""Rendered PDF pages kept as derived objects: made once per document, page and size by the real PDF
worker, read back afterwards without starting it, and never shared between two render sizes."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from iris.app.media import documents
from iris.app.media.page_images import page_image_path, page_pngs
from iris.app.storage.local import LocalStorage
from tests.support.documents import IMAGE_CONTENT, build_pdf, text_content

SCAN = build_pdf([text_content(["Cover"]), IMAGE_CONTENT, IMAGE_CONTENT])
STORED = "agent-inputs/alice/t1/uploads/0b7e2a51-5d0c-4f0e-9a3c-6f1e2d3c4b5a.pdf"


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """Each PDF worker render job started (the 0-based pages it was given)."""
    seen: list[tuple[int, ...]] = []
    real = documents.render_pdf_pages

    async def counted(data: bytes, pages: Sequence[int], **bounds: Any) -> list[bytes]:
        seen.append(tuple(pages))
        return await real(data, pages, **bounds)

    monkeypatch.setattr(documents, "render_pdf_pages", counted)
    return seen


def edge(png: bytes) -> int:
    with Image.open(io.BytesIO(png)) as image:
        return max(image.size)


async def test_pages_are_rendered_once_per_size_and_then_read_back(
    tmp_path: Path, renders: list[tuple[int, ...]]
) -> None:
    storage = LocalStorage(tmp_path, "iris", public_url="http://127.0.0.1:8000", secret="s" * 40)
    loads: list[int] = []

    async def load() -> bytes:
        loads.append(1)
        return SCAN

    first = await page_pngs(storage, STORED, load, [2, 3], edge_px=256, timeout=20)
    again = await page_pngs(storage, STORED, load, [2, 3], edge_px=256, timeout=20)
    larger = await page_pngs(storage, STORED, load, [3], edge_px=512, timeout=20)

    assert renders == [(1, 2), (2,)]  # the second call started no worker; another size did
    assert len(loads) == 2  # the PDF itself was read only when something had to be rendered
    assert again == first
    assert [edge(first[2]), edge(first[3]), edge(larger[3])] == [256, 256, 512]
    assert await storage.read(page_image_path(STORED, 3, 256)) == first[3]
    assert await storage.read(page_image_path(STORED, 3, 512)) == larger[3]
    assert (tmp_path / "iris" / page_image_path(STORED, 3, 256)).is_file()  # where the last test looks
    assert page_image_path(STORED, 3, 256).startswith(
        "derived/documents/0b7e2a51-5d0c-4f0e-9a3c-6f1e2d3c4b5a/"
    )


async def test_a_missing_page_is_rendered_beside_the_kept_ones(
    tmp_path: Path, renders: list[tuple[int, ...]]
) -> None:
    storage = LocalStorage(tmp_path, "iris", public_url="http://127.0.0.1:8000", secret="s" * 40)

    async def load() -> bytes:
        return SCAN

    await page_pngs(storage, STORED, load, [2], edge_px=256, timeout=20)
    both = await page_pngs(storage, STORED, load, [2, 3], edge_px=256, timeout=20)

    assert renders == [(1,), (2,)]
    assert list(both) == [2, 3]


async def test_a_pdf_that_was_never_stored_is_rendered_and_not_kept(
    tmp_path: Path, renders: list[tuple[int, ...]]
) -> None:
    storage = LocalStorage(tmp_path, "iris", public_url="http://127.0.0.1:8000", secret="s" * 40)

    async def load() -> bytes:
        return SCAN

    for _ in range(2):
        assert list(await page_pngs(storage, "", load, [2], edge_px=256, timeout=20)) == [2]

    assert renders == [(1,), (1,)]
    assert not (tmp_path / "iris" / "derived").exists()
