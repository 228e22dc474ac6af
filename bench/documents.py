"""PDF uploads: a 100-page PDF's upload time and the PDF worker process's peak memory.

Starts a real server (`python -m app serve`, SQLite + local storage in a temp dir), uploads the same
100-page PDF (a few lines of text on every page) ``ROUNDS`` times one after another, and prints:
- the upload time (median and worst): spool, a fresh PDFium worker that counts the pages, reads every
  page's text and renders the first-page thumbnail, storage, the row;
- the worker's peak RSS (``VmHWM``, sampled every 2 ms while it lives), against the
  ``IRIS_PDF_WORKER_MEMORY_BYTES`` cap it runs under.
The time to first text for a run with one PDF (:func:`first_text_seconds`) comes with the run side of
issue 22.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
from _iris import iris, load, process_tree
from _results import Results

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.support.documents import text_pdf  # noqa: E402

ROUNDS = 5
PAGES = 100


def worker_hwm_bytes(server_pid: int) -> int | None:
    """The peak RSS of the server's live PDF worker, if one is running."""
    for pid in process_tree(server_pid):
        try:
            if b"app.media.pdf_worker" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            continue
    return None


async def upload_once(
    client: httpx.AsyncClient, base: str, token: str, data: bytes, pid: int
) -> tuple[float, int]:
    peak = 0
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, worker_hwm_bytes(pid) or 0)
            await asyncio.sleep(0.002)

    sampler = asyncio.create_task(sample())
    start = time.perf_counter()
    response = await client.post(
        f"{base}/api/files",
        files={"file": ("report.pdf", data, "application/pdf")},
        data={"threadId": str(uuid.uuid4())},
        headers={"Authorization": f"Bearer {token}"},
    )
    elapsed = time.perf_counter() - start
    done.set()
    await sampler
    response.raise_for_status()
    assert response.json()["pages"] == PAGES, response.text
    return elapsed, peak


async def measure(base: str, token: str, data: bytes, pid: int) -> list[tuple[float, int]]:
    async with httpx.AsyncClient(timeout=120) as client:
        await upload_once(client, base, token, data, pid)  # warm-up: first imports, first spool dir
        return [await upload_once(client, base, token, data, pid) for _ in range(ROUNDS)]


def first_text_seconds(base: str, token: str, data: bytes) -> float | None:
    """Time to the first text of a run that carries one PDF: measured once runs take document parts
    (the run side of issue 22); ``None`` until then."""
    del base, token, data
    return None


def main() -> int:
    pages = [
        f"Page {n} of the quarterly report\nRevenue, costs and the outlook for page {n}" for n in range(PAGES)
    ]
    data = text_pdf(pages)
    with tempfile.TemporaryDirectory(prefix="iris-bench-") as tmp, iris(tmp) as (base, token, pid):
        rounds = asyncio.run(measure(base, token, data, pid))
        first_text = first_text_seconds(base, token, data)
    times = [t for t, _ in rounds]
    median, worst = statistics.median(times), max(times)
    peak_mb = max(p for _, p in rounds) / 1e6
    print(f"PDF: {PAGES} pages, {len(data) / 1e3:.0f} kB; {ROUNDS} uploads one after another (load {load()})")
    print(f"upload time: median {median:.3f} s, worst {worst:.3f} s (no target)")
    print(f"PDF worker peak RSS: {peak_mb:.1f} MB (cap: IRIS_PDF_WORKER_MEMORY_BYTES, 1 GiB address space)")
    print(
        "time to first text with one PDF:",
        "not measured yet" if first_text is None else f"{first_text:.3f} s",
    )
    results = Results("documents")
    results.figure("pdf_upload_seconds_median", median, "s")
    results.figure("pdf_upload_seconds_worst", worst, "s")
    results.figure("pdf_worker_peak_rss", peak_mb, "MB")
    results.figure("load_average", load(), "")
    if first_text is not None:
        results.figure("pdf_run_first_text_seconds", first_text, "s")
    results.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
