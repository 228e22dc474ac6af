"""Slow readers never freeze the server nor keep its memory (issue 27, defect 2).

A real ``python -m iris serve`` streams a long run (about 20,000 events) to 40 followers that read
1 KB a second through a small receive window, and to one that reads nothing; the 40 then leave at
once. The server's own loop monitor (``GET /debug/loop``) must not have seen its loop blocked for
250 ms or more, its resident memory must come back within 20 % of where it was before the run, and
the follower that read nothing must have been let go with an ``iris/streamDropped`` event naming the
last event it got — from which it re-attaches with ``Last-Event-ID`` and gets every event exactly
once, through the run's end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from iris.app.security.auth import issue_token
from tests.conftest import JWT_SECRET
from tests.support.agui import check_lifecycle, parse_sse
from tests.support.iris_process import IrisProcess, iris_process
from tests.support.postgres import free_port
from tests.support.runs import run_input, user_message

READERS = 40
WORDS = " ".join(f"word{i:06d}" for i in range(60_000))
"""About 9 MB of events: more than the kernel's socket buffers take on loopback (about 4 MB a
connection), so a reader that does not keep up really holds its stream back."""
STALL_LIMIT_MS = 250.0
BIN = Path(sys.executable).parent
ALICE = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'alice')}"}


def rss_bytes(process: IrisProcess) -> int:
    """The server process's resident set size."""
    for line in Path(f"/proc/{process.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc")


async def slow_reader(port: int, path: str, leave: asyncio.Event) -> int:
    """GET ``path`` through a 4 KB receive window and read 1 KB a second until ``leave``; then close at
    once. Returns the bytes it read."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=4096)
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        f"Authorization: {ALICE['Authorization']}\r\n\r\n".encode()
    )
    await writer.drain()
    got = 0
    while not leave.is_set():
        got += len(await reader.read(1024))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(leave.wait(), 1.0)
    writer.transport.abort()  # gone at once, as a closed tab or a dropped network is
    return got


@pytest.fixture
def server_env(tmp_path: Path) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "IRIS_DATA_DIR": str(tmp_path / "data"),
        "IRIS_JWT_SECRET": JWT_SECRET,
        "IRIS_PROVIDERS": "local",
        "IRIS_DEBUG": "true",
        "IRIS_SSE_FOLLOWER_MAX_BYTES": str(256 * 1024),
        "IRIS_SSE_FOLLOWER_MAX_FRAMES": "2048",
    }
    subprocess.run([str(BIN / "alembic"), "upgrade", "head"], env=env, check=True, capture_output=True)
    return env


async def test_slow_readers_leaving_at_once_neither_stall_the_loop_nor_keep_memory(
    server_env: dict[str, str], tmp_path: Path
) -> None:
    port = free_port()
    with iris_process(server_env, port, tmp_path / "iris.log") as iris:
        async with httpx.AsyncClient(base_url=iris.base_url, timeout=300) as http:
            # one run of the same size first: what any such run leaves (caches, allocator arenas) is
            # there before the readers come, so what is measured is theirs
            warm = run_input(str(uuid.uuid4()), user_message(WORDS))
            assert (await http.post("/agent/runs", json=warm, headers=ALICE)).status_code == 200
            before = rss_bytes(iris)

            body = run_input(str(uuid.uuid4()), user_message(WORDS))
            events_path = f"/agent/runs/{body['runId']}/events"
            # the run's own client reads nothing of its stream until the run is over, through a small
            # receive window (loopback's default grows to 32 MB, which would take the whole run)
            window = [(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)]
            transport = httpx.AsyncHTTPTransport(socket_options=window)
            async with (
                httpx.AsyncClient(base_url=iris.base_url, timeout=300, transport=transport) as narrow,
                narrow.stream("POST", "/agent/runs", json=body, headers=ALICE) as stalled,
            ):
                assert stalled.status_code == 200
                leave = asyncio.Event()
                readers = [asyncio.create_task(slow_reader(port, events_path, leave)) for _ in range(READERS)]
                await asyncio.sleep(5)
                peak = rss_bytes(iris)
                leave.set()  # the 40 leave together, mid-run
                read = await asyncio.gather(*readers)
                # past the run's last event: answers once the run is over (at once if it already is)
                ended = await http.get(events_path, headers=ALICE, params={"after": 10**9})
                assert ended.status_code == 200
                first = b"".join([chunk async for chunk in stalled.aiter_bytes()])
            dropped = parse_sse(first)
            notice = dropped[-1]
            last = int(dropped[-2].id or 0)
            rest = await http.get(events_path, headers={**ALICE, "Last-Event-ID": str(last)})
            replay = await http.get(events_path, headers=ALICE)
            await asyncio.sleep(2)  # followers gone, run over: what they held is given back
            after = rss_bytes(iris)
            loop = (await http.get("/debug/loop")).json()

    assert all(read), "every slow reader got something"
    figures = (
        f"RSS {before / 2**20:.0f} MiB before, {peak / 2**20:.0f} with the readers, "
        f"{after / 2**20:.0f} after; "
        f"loop blocked at most {loop['maxBlockedMs']} ms, in:\n{loop['worstStack']}"
    )
    assert loop["maxBlockedMs"] < STALL_LIMIT_MS, figures
    assert after <= before * 1.2, figures

    assert notice.id is None, "the notice is no event of the run"
    assert (notice.data["type"], notice.data["name"]) == ("CUSTOM", "iris/streamDropped"), notice
    assert notice.data["value"] == {"reason": "slow_reader", "lastEventId": last}
    resumed = parse_sse(rest.content)
    seen = dropped[:-1] + resumed
    assert [int(f.id or 0) for f in seen] == list(range(1, len(seen) + 1)), "every event once, in order"
    assert [f.data for f in seen] == [f.data for f in parse_sse(replay.content)]
    check_lifecycle([f.data for f in seen])
