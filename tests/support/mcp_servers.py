"""Starting the test MCP server (tests/support/mcp_server.py): its stdio command, or a Streamable HTTP
process on a free loopback port, waited for by polling the port (never a fixed sleep); ``serving`` does the
same for any server process (the reference servers)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

SERVER = Path(__file__).with_name("mcp_server.py")
STARTUP_SECONDS = 60.0  # a loaded 2-core machine imports the SDK slowly


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    """The folder the test MCP server leaves the files the tests wait on in (its ``MARK_DIR``), empty
    at the start of each test."""
    path = tmp_path / "marks"
    path.mkdir()
    return path


def stdio_entry(name: str, mark_dir: Path, **extra: object) -> dict[str, object]:
    """A ``POST /api/mcp-servers`` body (or models-file entry) that starts the server over stdio."""
    return {
        "name": name,
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(SERVER)],
        "env": {"MARK_DIR": str(mark_dir)},
        **extra,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def http_server(
    mark_dir: Path, *, env: Mapping[str, str] | None = None, port: int | None = None
) -> Iterator[str]:
    """The server over Streamable HTTP: yields its URL (``http://127.0.0.1:{port}/mcp``)."""
    port = port or free_port()
    command = [sys.executable, str(SERVER), "--http", "--port", str(port)]
    with serving(command, port, env={"MARK_DIR": str(mark_dir), **(env or {})}):
        yield f"http://127.0.0.1:{port}/mcp"


@contextmanager
def serving(
    command: list[str], port: int, *, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """Any MCP server process (``command``, with ``env`` over this process's) until it listens on
    ``port`` of the loopback interface (yielded, for a test that kills it); stopped afterwards."""
    process = subprocess.Popen(command, env={**os.environ, **(env or {})})
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the MCP server {command[0]} did not start") from None
                time.sleep(0.05)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def wait_for(path: Path, within: float = STARTUP_SECONDS) -> str:
    """The content of ``path`` once the server has written it (a mark it leaves); polled, since a
    file written by another process signals nothing else."""
    mark = anyio.Path(path)
    async with asyncio.timeout(within):
        while not await mark.exists() or not await mark.read_text():  # noqa: ASYNC110 -- nothing to await
            await asyncio.sleep(0.02)
    return await mark.read_text()
