"""The soak's slow readers (issue 27, defect 2): followers of a long run that read about 1 KB a second
through a small receive window and then leave at once, and one that reads nothing until the run is over.

Loopback's socket buffers take about 4 MB a connection, so a run of about 9 MB of events is needed for
a reader that does not keep up to really hold its stream back (tests/runs/store/test_slow_readers.py is the
test of the same thing). The reader that read nothing must have been let go with a ``CUSTOM``
``iris/streamDropped`` event naming the last event it got, and re-attaching from it with
``Last-Event-ID`` must give every event exactly once through the run's end.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
import uuid
from typing import TYPE_CHECKING, Any

import httpx
from _sse import frames

if TYPE_CHECKING:
    from _soak_client import Client

READERS = 10
"""Slow readers per round, attached together and gone together."""
READ_SECONDS = 5.0
WORDS = " ".join(f"word{i:06d}" for i in range(60_000))
"""About 9 MB of events: more than loopback's buffers and the default follower bound together."""
WINDOW = 4096
"""The readers' receive buffer (``SO_RCVBUF``): loopback's default grows to 32 MB and would take the run."""


async def slow_reader(port: int, path: str, authorization: str, leave: asyncio.Event) -> int:
    """GET ``path`` through a small receive window, read 1 KB a second until ``leave``, then close at once
    (as a closed tab or a dropped network does). Returns the bytes it read."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, WINDOW)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=WINDOW)
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        f"Authorization: {authorization}\r\n\r\n".encode()
    )
    await writer.drain()
    got = 0
    while not leave.is_set():
        got += len(await reader.read(1024))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(leave.wait(), 1.0)
    writer.transport.abort()
    return got


class SlowReaders:
    """Rounds of one long run, its slow readers and its stalled reader, until the soak ends; counts its
    errors and lost answers on ``client`` (its latencies are not the mix's: these streams are long by
    design)."""

    def __init__(self, client: Client, port: int) -> None:
        self.client = client
        self.port = port
        self.rounds = 0
        self.bytes_read: list[int] = []
        self.reattached = 0
        """Stalled readers dropped with ``iris/streamDropped`` that re-attached and got every event once."""

    async def loop(self, until: float) -> None:
        window = [(socket.SOL_SOCKET, socket.SO_RCVBUF, WINDOW)]
        transport = httpx.AsyncHTTPTransport(socket_options=window)
        base = str(self.client.http.base_url)
        async with httpx.AsyncClient(base_url=base, timeout=300, transport=transport) as narrow:
            while time.monotonic() < until:
                try:
                    await self.round(narrow)
                except httpx.HTTPError as exc:
                    self.client.errors[f"slow readers transport {type(exc).__name__}"] += 1

    async def round(self, narrow: httpx.AsyncClient) -> None:
        client = self.client
        thread = str(uuid.uuid4())
        body = client.run_body(thread, WORDS)
        path = f"/agent/runs/{body['runId']}/events"
        # the run's own client reads nothing of its stream until the run is over
        async with narrow.stream("POST", "/agent/runs", json=body, headers=client.headers) as stalled:
            if stalled.status_code != 200:
                client.errors[f"long run {stalled.status_code}"] += 1
                return
            leave = asyncio.Event()
            authorization = client.headers["Authorization"]
            reading = (slow_reader(self.port, path, authorization, leave) for _ in range(READERS))
            readers = [asyncio.create_task(reader) for reader in reading]
            await asyncio.sleep(READ_SECONDS)
            leave.set()  # all of them leave together, mid-run
            read = await asyncio.gather(*readers)
            self.bytes_read += read
            client.errors["slow reader got nothing"] += read.count(0)
            # wait for the run's end (past its last event: no events, ends with the run), then take
            # what the stalled stream holds
            ended = await client.http.get(path, headers=client.headers, params={"after": 10**9}, timeout=300)
            if ended.status_code != 200 or frames(ended.content):
                client.errors[f"waiting for the long run's end: {ended.status_code}"] += 1
                return
            first = frames(b"".join([chunk async for chunk in stalled.aiter_bytes()]))
        self.rounds += 1
        await self.reattach(path, first)
        await client.answered(thread, 1)

    async def reattach(self, path: str, first: list[tuple[int, dict[str, Any]]]) -> None:
        """The stalled reader was dropped with a notice naming its last event; from there, every event
        once, numbered without a gap, through ``RUN_FINISHED``."""
        client = self.client
        notice = first[-1][1] if first else {}
        last = first[-2][0] if len(first) > 1 else 0
        dropped = {"type": "CUSTOM", "name": "iris/streamDropped"}
        if {k: notice.get(k) for k in dropped} != dropped:
            client.errors[f"stalled reader not dropped (ended {notice.get('type')})"] += 1
            return
        if first[-1][0] != 0 or notice.get("value") != {"reason": "slow_reader", "lastEventId": last}:
            client.errors["drop notice without its last event id"] += 1
            return
        headers = {**client.headers, "Last-Event-ID": str(last)}
        rest = frames((await client.http.get(path, headers=headers, timeout=300)).content)
        seen = [ident for ident, _ in first[:-1] + rest]
        if seen != list(range(1, len(seen) + 1)):
            client.errors["re-attach after a drop: events missing or repeated"] += 1
        elif client.ended(rest, "re-attach after a drop"):
            self.reattached += 1
