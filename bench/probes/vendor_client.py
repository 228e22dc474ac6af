"""The vendor SSE stream through the HTTP clients a gateway would pick (issue 26): Iris's vendor client
as it is built (``iris.app.vendor_http``: httpx over Iris's aiohttp transport, ``iris.providers.sse``), the
same on
httpx's own transport (``http2=True``, what ``IRIS_VENDOR_HTTP2`` selects), httpx over
``httpx-aiohttp``'s transport, and aiohttp directly.

Each client streams ``STREAMS`` sequential answers (50 content chunks, OpenAI's wire format) from
``bench/profile_run.py``'s fake upstream in its own process, reading every ``data:`` line and decoding
its JSON, as a provider does; after a warm-up, in rotating order, three passes. Figures: this process's
CPU per stream and wall time per stream (medians of the passes), and how many connections the pool
opened. A client that is not installed (``httpx-aiohttp`` is not a dependency) is skipped with the reason.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/, for _results and _iris
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository, for app and providers

from _iris import free_port, load, running
from _results import Results

from iris.app.vendor_http import TIMEOUT, vendor_http_client
from iris.providers.sse import server_sent_events

STREAMS = 300
WARMUP = 20
PASSES = 3
CHUNKS_PER_ANSWER = 53
"""The fake's ``data:`` chunks other than ``[DONE]``: the role, 50 contents, the finish, the usage."""

Stream = Callable[[str], Awaitable[int]]


async def _read_httpx(http: httpx.AsyncClient, url: str) -> int:
    chunks = 0
    async with http.stream("POST", url, content=b'{"stream":true}') as response:
        async for sse in server_sent_events(response, "openai"):
            if sse.data == "[DONE]":
                continue
            json.loads(sse.data)
            chunks += 1
    return chunks


async def iris_client() -> tuple[Stream, Callable[[], Awaitable[None]]]:
    http = vendor_http_client()
    return (lambda url: _read_httpx(http, url)), http.aclose


async def httpx_client() -> tuple[Stream, Callable[[], Awaitable[None]]]:
    http = vendor_http_client(http2=True)
    return (lambda url: _read_httpx(http, url)), http.aclose


async def httpx_aiohttp_client() -> tuple[Stream, Callable[[], Awaitable[None]]]:
    # Not a dependency of Iris: imported by name, so lint does not need it installed.
    transport = importlib.import_module("httpx_aiohttp").AiohttpTransport()
    http = httpx.AsyncClient(transport=transport, timeout=TIMEOUT)
    return (lambda url: _read_httpx(http, url)), http.aclose


async def _lines(content: Any) -> AsyncIterator[bytes]:
    async for line in content:
        yield line.rstrip(b"\r\n")


async def aiohttp_client() -> tuple[Stream, Callable[[], Awaitable[None]]]:
    import aiohttp

    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(sock_connect=10))

    async def read(url: str) -> int:
        chunks = 0
        async with session.post(url, data=b'{"stream":true}') as response:
            async for line in _lines(response.content):
                if line.startswith(b"data: ") and line != b"data: [DONE]":
                    json.loads(line[6:])
                    chunks += 1
        return chunks

    return read, session.close


CLIENTS: dict[str, tuple[str, Callable[[], Awaitable[tuple[Stream, Callable[[], Awaitable[None]]]]]]] = {
    "Iris (httpx over its aiohttp transport, the default)": ("iris", iris_client),
    "httpx's own transport (IRIS_VENDOR_HTTP2)": ("httpx", httpx_client),
    "httpx + httpx-aiohttp": ("httpx_aiohttp", httpx_aiohttp_client),
    "aiohttp directly": ("aiohttp", aiohttp_client),
}


async def measure(url: str) -> tuple[dict[str, list[tuple[float, float]]], list[str]]:
    clients: dict[str, tuple[Stream, Callable[[], Awaitable[None]]]] = {}
    skipped: list[str] = []
    for name, (_, make) in CLIENTS.items():
        try:
            clients[name] = await make()
        except ImportError as exc:
            skipped.append(f"{name} skipped: {exc}")
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in clients}
    for read, _ in clients.values():
        for _ in range(WARMUP):
            await read(url)
    for rotation in range(PASSES):
        names = list(clients)
        for name in names[rotation % len(names) :] + names[: rotation % len(names)]:
            read = clients[name][0]
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(STREAMS):
                if await read(url) != CHUNKS_PER_ANSWER:
                    raise RuntimeError(f"{name}: a stream came back short")
            figures[name].append(
                ((time.process_time() - cpu) * 1000 / STREAMS, (time.perf_counter() - wall) * 1000 / STREAMS)
            )
    for _, close in clients.values():
        await close()
    return figures, skipped


def main() -> int:
    results = Results("vendor_client")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, str(Path(__file__).parent.parent / "profile_run.py"), "--upstream", str(port)]
    with (
        tempfile.TemporaryDirectory() as tmp,
        running(command, dict(os.environ), Path(tmp) / "upstream.log", f"{base}/healthz"),
    ):
        before = load()
        figures, skipped = asyncio.run(measure(f"{base}/v1/chat/completions"))
        after = load()
    print(
        f"{STREAMS} sequential streams of 50 chunks per pass, {PASSES} passes"
        f" (load {before:.2f} -> {after:.2f})"
    )
    for name, passes in figures.items():
        cpu = statistics.median(c for c, _ in passes)
        wall = statistics.median(w for _, w in passes)
        print(f"  {name}: client CPU {cpu:.3f} ms per stream, wall {wall:.3f} ms per stream")
        key = CLIENTS[name][0]
        results.figure(f"{key}_cpu_per_stream", cpu, "ms")
        results.figure(f"{key}_wall_per_stream", wall, "ms")
    print("\n".join(f"  {line}" for line in skipped))
    results.figure("load_average", after, "1-minute")
    results.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
