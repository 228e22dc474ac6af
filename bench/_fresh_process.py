"""The soak's fresh process (issue 27, defect 1): a second Iris started while the soak runs, on its own
port and the same data dir — so the same SQLite file, busy with the soak's writes, and the same JWT
secret — as a rolling restart or an added worker would be. Its first requests (the providers listing,
which must pay for no import, with a ``/healthz`` probe beside it; the models listing; a run and its
history) are timed, and its own loop monitor says how long its loop was blocked while it served them.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from _iris import free_port, iris_env, started, wait_up
from _sse import frames

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from _soak_client import Client

STARTUP_SECONDS = 120.0
"""How long it may take to answer ``/healthz`` on a loaded machine."""


async def timed(request: Awaitable[Any]) -> tuple[Any, float]:
    """The request's answer and how long it took, in ms."""
    started_at = time.perf_counter()
    answer = await request
    return answer, (time.perf_counter() - started_at) * 1000


class FreshProcess:
    """Starts the process after ``delay`` s, makes its first requests, stops it; figures in ``self.ms``
    (``None`` until measured), errors and lost answers on a client of its own."""

    def __init__(self, data_dir: str, log: Path, token: str, delay: float, make_client: type[Client]) -> None:
        self.data_dir = data_dir
        self.log = log
        self.token = token
        self.delay = delay
        self.make_client = make_client
        self.client: Client | None = None
        self.ms: dict[str, float] = {}
        self.failure: str | None = None
        """Why it did not come up or its requests broke off, if they did."""

    async def run(self) -> None:
        await asyncio.sleep(self.delay)
        port = free_port()
        env = await asyncio.to_thread(iris_env, self.data_dir, port, {"IRIS_DEBUG": "true"})
        base = f"http://127.0.0.1:{port}"
        stack = ExitStack()
        try:
            launched = time.perf_counter()
            process = stack.enter_context(started([sys.executable, "-m", "iris", "serve"], env, self.log))
            await asyncio.to_thread(wait_up, process, self.log, f"{base}/healthz", STARTUP_SECONDS)
            self.ms["startup"] = (time.perf_counter() - launched) * 1000
            async with httpx.AsyncClient(base_url=base, timeout=60) as http:
                self.client = self.make_client(http, self.token, random.Random(-1))
                await self.first_requests(self.client)
                loop = (await http.get("/debug/loop")).json()
                self.ms["blocked"], self.ms["late"] = loop["maxBlockedMs"], loop["maxStallMs"]
        except (RuntimeError, httpx.HTTPError) as exc:
            self.failure = f"fresh process {type(exc).__name__}: {str(exc)[:200]}"
        finally:
            # stopping waits for the process (up to 10 s): not on this loop, whose clients go on
            await asyncio.to_thread(stack.close)

    async def first_requests(self, client: Client) -> None:
        (_, self.ms["providers"]), (probe, self.ms["healthz"]) = await asyncio.gather(
            timed(client.request("GET", "/api/providers", 200)), timed(client.http.get("/healthz"))
        )
        if probe.status_code != 200:
            client.errors[f"fresh /healthz {probe.status_code}"] += 1
        _, self.ms["models"] = await timed(client.request("GET", "/api/models", 200))
        thread = str(uuid.uuid4())
        body = client.run_body(thread, "hello from a fresh process")
        answer, self.ms["run"] = await timed(client.request("POST", "/agent/runs", 200, json=body))
        if answer is not None and client.ended(frames(answer.content), "fresh run"):
            await client.answered(thread, 1)
