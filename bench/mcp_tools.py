"""An MCP tool round trip's added time over the tool's own time, over stdio and Streamable HTTP.

Iris's own connection (``iris.app.mcp.connection.ServerConnection``: the SDK client, the call timeout, the
result mapped to a ``ToolResult``) calls a real SDK server (``bench/_mcp_timed_server.py``, started
as a subprocess or on a loopback port) whose tools time themselves. For each call, added time =
round trip - the tool's own time: the JSON-RPC framing, the transport, base64 of the image and the
mapping, i.e. what using a tool through MCP costs over running the same code in-process. Two tools:
``noop`` (own time ~0) and ``chart`` (draws a PNG, ~3 kB, that rides back as base64). Sequential calls
after a warm-up; medians and p95. No target is set by the issue: the figures are reported as measured,
with the load average (a loaded 2-core machine inflates them).
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _results import Results

from iris.app.mcp.config import ServerConfig
from iris.app.mcp.connection import ServerConnection
from iris.tools import ImageContent, TextContent

SERVER = Path(__file__).resolve().with_name("_mcp_timed_server.py")
WARM_UP = 20
CALLS = {"noop": 300, "chart": 150}
STARTUP_SECONDS = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def http_server() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the bench MCP server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def config(transport: str, url: str | None) -> ServerConfig:
    common = {"connect_timeout_seconds": STARTUP_SECONDS, "call_timeout_seconds": 30.0, "version": "1"}
    if transport == "http":
        return ServerConfig(name="bench", transport="http", url=url, **common)  # type: ignore[arg-type]
    return ServerConfig(
        name="bench",
        transport="stdio",
        command=sys.executable,
        args=(str(SERVER),),
        **common,  # type: ignore[arg-type]
    )


async def measure(connection: ServerConnection, tool: str, calls: int) -> tuple[list[float], list[float]]:
    """Round trips and the tool's own times, in milliseconds."""
    arguments = {"values": [3, 1, 4, 1, 5, 9, 2, 6]} if tool == "chart" else {}
    trips: list[float] = []
    owns: list[float] = []
    for index in range(WARM_UP + calls):
        start = time.perf_counter()
        result = await connection.call(tool, arguments)
        trip = (time.perf_counter() - start) * 1000
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result.summary}")
        text = next(p.text for p in result.content if isinstance(p, TextContent))
        if tool == "chart" and not any(isinstance(p, ImageContent) for p in result.content):
            raise RuntimeError("the chart came back without its image")
        if index >= WARM_UP:
            trips.append(trip)
            owns.append(float(text.removeprefix("own_ms=")))
    return trips, owns


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


async def run_transport(transport: str, url: str | None, results: Results) -> None:
    connection = ServerConnection(config(transport, url), dict(os.environ), tools_ttl_seconds=3600)
    try:
        await connection.tools()  # connect and list once: start-up is not a round trip
        for tool, calls in CALLS.items():
            trips, owns = await measure(connection, tool, calls)
            added = [trip - own for trip, own in zip(trips, owns, strict=True)]
            median, high, own = statistics.median(added), p95(added), statistics.median(owns)
            print(
                f"{transport:5} {tool:5}: added {median:6.2f} ms median, {high:6.2f} ms p95 over the tool's "
                f"own {own:6.3f} ms ({calls} calls, round trip median {statistics.median(trips):.2f} ms)"
            )
            results.figure(f"mcp_{transport}_{tool}_added_median", median, "ms")
            results.figure(f"mcp_{transport}_{tool}_added_p95", high, "ms")
            results.figure(f"mcp_{transport}_{tool}_own_median", own, "ms")
    finally:
        await connection.close()


def main() -> int:
    results = Results("mcp_tools")
    load_before = os.getloadavg()[0]
    asyncio.run(run_transport("stdio", None, results))
    with http_server() as url:
        asyncio.run(run_transport("http", url, results))
    load_after = os.getloadavg()[0]
    print(f"load average (1 min): {load_before:.2f} before, {load_after:.2f} after, on {os.cpu_count()} CPUs")
    results.figure("load_average_1min_before", load_before, "")
    results.figure("load_average_1min_after", load_after, "")
    results.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
