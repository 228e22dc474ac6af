"""PDF uploads: a 100-page PDF's upload time and the PDF worker process's peak memory.

Starts a real server (`python -m iris serve`, SQLite + local storage in a temp dir), uploads the same
100-page PDF (a few lines of text on every page) ``ROUNDS`` times one after another, and prints:
- the upload time (median and worst): spool, a fresh PDFium worker that counts the pages, reads every
  page's text and renders the first-page thumbnail, storage, the row;
- the worker's peak RSS (``VmHWM``, sampled every 2 ms while it lives), against the
  ``IRIS_PDF_WORKER_MEMORY_BYTES`` cap it runs under.
- the time to first text of a run on ``local/multimodal`` that carries that PDF (a ``document`` part,
  url source), against the same run without it (:func:`first_text_seconds`).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from _iris import iris, load, process_tree
from _results import Results

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.support.documents import text_pdf  # noqa: E402

ROUNDS = 5
PAGES = 100
MODEL = "local/multimodal"  # the seeded offline model that reads PDFs natively


def worker_hwm_bytes(server_pid: int) -> int | None:
    """The peak RSS of the server's live PDF worker, if one is running."""
    for pid in process_tree(server_pid):
        try:
            if b"iris.app.media.pdf_worker" not in Path(f"/proc/{pid}/cmdline").read_bytes():
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


def run_body(thread_id: str, part: dict[str, Any] | None) -> dict[str, Any]:
    """One AG-UI run on ``local/multimodal``: the prompt, and the PDF's part when there is one."""
    content: list[dict[str, Any]] = [{"type": "text", "text": "What is in this report?"}]
    if part is not None:
        content.append(part)
    return {
        "threadId": thread_id,
        "runId": str(uuid.uuid4()),
        "messages": [{"id": str(uuid.uuid4()), "role": "user", "content": content}],
        "forwardedProps": {"modelId": MODEL},
    }


async def time_to_first_text(client: httpx.AsyncClient, base: str, token: str, body: dict[str, Any]) -> float:
    """From sending the run to its first ``TEXT_MESSAGE_CONTENT`` (the stream is read to its end)."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    first: float | None = None
    start = time.perf_counter()
    async with client.stream("POST", f"{base}/agent/runs", json=body, headers=headers) as response:
        if response.status_code != 200:
            raise RuntimeError(f"/agent/runs answered {response.status_code}: {await response.aread()!r}")
        async for line in response.aiter_lines():
            if first is None and line.startswith("data:") and '"TEXT_MESSAGE_CONTENT"' in line:
                first = time.perf_counter() - start
    if first is None:
        raise RuntimeError("the run streamed no text")
    return first


async def first_text_seconds(base: str, token: str, data: bytes) -> tuple[list[float], list[float]]:
    """Times to first text of ``ROUNDS`` runs that carry the PDF (uploaded to a fresh thread beforehand,
    not timed) and of ``ROUNDS`` same runs without it, alternating: the run side of a PDF (URL check,
    the stored bytes read back, the model reading them) against a plain run."""
    with_pdf: list[float] = []
    without: list[float] = []
    async with httpx.AsyncClient(timeout=120) as client:
        for round_ in range(ROUNDS + 1):
            thread = str(uuid.uuid4())
            uploaded = await client.post(
                f"{base}/api/files",
                files={"file": ("report.pdf", data, "application/pdf")},
                data={"threadId": thread},
                headers={"Authorization": f"Bearer {token}"},
            )
            uploaded.raise_for_status()
            pdf = await time_to_first_text(
                client, base, token, run_body(thread, uploaded.json()["parts"]["agui"])
            )
            plain = await time_to_first_text(client, base, token, run_body(str(uuid.uuid4()), None))
            if round_:  # round 0 warms up: first run, first imports
                with_pdf.append(pdf)
                without.append(plain)
    return with_pdf, without


def main() -> int:
    pages = [
        f"Page {n} of the quarterly report\nRevenue, costs and the outlook for page {n}" for n in range(PAGES)
    ]
    data = text_pdf(pages)
    with tempfile.TemporaryDirectory(prefix="iris-bench-") as tmp, iris(tmp) as (base, token, pid):
        rounds = asyncio.run(measure(base, token, data, pid))
        with_pdf, without = asyncio.run(first_text_seconds(base, token, data))
    times = [t for t, _ in rounds]
    median, worst = statistics.median(times), max(times)
    peak_mb = max(p for _, p in rounds) / 1e6
    print(f"PDF: {PAGES} pages, {len(data) / 1e3:.0f} kB; {ROUNDS} uploads one after another (load {load()})")
    print(f"upload time: median {median:.3f} s, worst {worst:.3f} s (no target)")
    print(f"PDF worker peak RSS: {peak_mb:.1f} MB (cap: IRIS_PDF_WORKER_MEMORY_BYTES, 1 GiB address space)")
    pdf_median, plain_median = statistics.median(with_pdf), statistics.median(without)
    print(
        f"time to first text ({MODEL}, {ROUNDS} runs each): with the PDF median {pdf_median:.3f} s"
        f" (worst {max(with_pdf):.3f} s), without it {plain_median:.3f} s (worst {max(without):.3f} s)"
        f" (load {load()}; no target)"
    )
    results = Results("documents")
    results.figure("pdf_upload_seconds_median", median, "s")
    results.figure("pdf_upload_seconds_worst", worst, "s")
    results.figure("pdf_worker_peak_rss", peak_mb, "MB")
    results.figure("pdf_run_first_text_seconds_median", pdf_median, "s")
    results.figure("pdf_run_first_text_seconds_worst", max(with_pdf), "s")
    results.figure("plain_run_first_text_seconds_median", plain_median, "s")
    results.figure("load_average", load(), "")
    results.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
