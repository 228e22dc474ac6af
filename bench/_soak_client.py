"""The soak's client (bench/soak.py): one simulated user looping over a random mix of requests and counting
wrong statuses, streams that end wrongly and answers missing from history. Its own module so that the
soak's helpers (bench/_slow_readers.py, bench/_fresh_process.py) can use it without importing the soak.
"""

from __future__ import annotations

import io
import random
import time
import uuid
from collections import Counter
from typing import Any

import httpx
from _sse import frames
from PIL import Image


def png(seed: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (320, 240), (seed % 256, 90, 160)).save(buffer, format="PNG")
    return buffer.getvalue()


class Client:
    def __init__(self, http: httpx.AsyncClient, token: str, rng: random.Random) -> None:
        self.http = http
        self.headers = {"Authorization": f"Bearer {token}"}
        self.rng = rng
        self.latencies: list[float] = []
        self.errors: Counter[str] = Counter()
        self.lost = 0

    async def request(self, method: str, path: str, expect: int, **kw: Any) -> httpx.Response | None:
        started = time.perf_counter()
        response = await self.http.request(method, path, headers=self.headers, **kw)
        self.latencies.append(time.perf_counter() - started)
        if response.status_code != expect:
            self.errors[f"{method} {path.split('/')[1:3]} {response.status_code}"] += 1
            return None
        return response

    def ended(self, events: list[tuple[int, dict[str, Any]]], what: str, outcome: str = "success") -> bool:
        last = events[-1][1] if events else {}
        ok = last.get("type") == "RUN_FINISHED" and last.get("outcome", {}).get("type") == outcome
        if not ok:
            self.errors[f"{what} ended {last.get('type')} {last.get('code', '')}"] += 1
        return ok

    async def answered(self, thread: str, answers: int) -> None:
        response = await self.request("GET", f"/agent/threads/{thread}/messages", 200)
        if response is None:
            return
        roles = [m["role"] for m in response.json()["messages"]]
        if roles.count("assistant") < answers:
            self.lost += 1

    async def upload(self, thread: str) -> dict[str, Any] | None:
        files = {"file": ("x.png", png(self.rng.randrange(1 << 16)), "image/png")}
        response = await self.request("POST", "/api/files", 201, files=files, data={"threadId": thread})
        return None if response is None else response.json()

    def run_body(
        self, thread: str, text: str, *parts: dict[str, Any], model: str | None = None
    ) -> dict[str, Any]:
        content = [{"type": "text", "text": text}, *parts]
        return {
            "threadId": thread,
            "runId": str(uuid.uuid4()),
            "messages": [{"id": str(uuid.uuid4()), "role": "user", "content": content}],
            "state": {},
            "tools": [],
            "context": [],
            "forwardedProps": {"modelId": model} if model else {},
        }

    async def run_with_image(self) -> None:
        thread = str(uuid.uuid4())
        uploaded = await self.upload(thread)
        if uploaded is None:
            return
        body = self.run_body(thread, "what is in this picture?", uploaded["parts"]["agui"])
        response = await self.request("POST", "/agent/runs", 200, json=body)
        if response is not None and self.ended(frames(response.content), "run"):
            await self.answered(thread, 1)
            again = self.run_body(thread, "and again")
            again["runId"] = body["runId"]
            await self.request("POST", "/agent/runs", 409, json=again)  # a reused runId

    async def chat(self) -> None:
        response = await self.request("POST", "/api/agents/default/chat", 200, json={"content": "hi there"})
        if response is None:
            return
        events = frames(response.content)
        if self.ended(events, "chat"):
            session = events[0][1]["threadId"]
            regenerated = await self.request(
                "POST", "/api/agents/default/chat", 200, json={"sessionId": session, "regenerate": True}
            )
            if regenerated is not None and self.ended(frames(regenerated.content), "regenerate"):
                await self.answered(session, 1)

    async def upload_only(self) -> None:
        await self.upload(str(uuid.uuid4()))

    async def slow(self, *, cancel: bool) -> None:
        thread = str(uuid.uuid4())
        body = self.run_body(thread, " ".join(f"w{i}" for i in range(60)), model="local/slow")
        started = time.perf_counter()
        seen = b""
        async with self.http.stream("POST", "/agent/runs", json=body, headers=self.headers) as response:
            if response.status_code != 200:
                self.errors[f"slow run {response.status_code}"] += 1
                return
            async for chunk in response.aiter_bytes():
                seen += chunk
                if seen.count(b"TEXT_MESSAGE_CONTENT") >= 5 and seen.endswith(b"\n\n"):
                    break
            # the thread is busy: a second run on it is refused
            await self.request("POST", "/agent/runs", 409, json=self.run_body(thread, "me too"))
            if cancel:
                await self.request("POST", f"/agent/runs/{body['runId']}/cancel", 202)
        self.latencies.append(time.perf_counter() - started)
        last_id = max(ident for ident, _ in frames(seen))
        headers = {**self.headers, "Last-Event-ID": str(last_id)}
        response = await self.http.get(f"/agent/runs/{body['runId']}/events", headers=headers)
        rest = frames(response.content)
        if any(ident <= last_id for ident, _ in rest):
            self.errors["re-attach id went backwards"] += 1
        if self.ended(rest, "re-attach", "cancelled" if cancel else "success"):
            await self.answered(thread, 1)

    async def refused(self) -> None:
        await self.request("GET", f"/agent/threads/{uuid.uuid4()}/messages", 404)
        await self.request("POST", "/agent/runs", 422, json=self.run_body(str(uuid.uuid4()), ""))

    async def loop(self, until: float) -> None:
        moves = [
            self.run_with_image,
            self.run_with_image,
            self.chat,
            self.upload_only,
            lambda: self.slow(cancel=False),
            lambda: self.slow(cancel=True),
            self.refused,
        ]
        while time.monotonic() < until:
            try:
                await self.rng.choice(moves)()
            except httpx.HTTPError as exc:
                self.errors[f"transport {type(exc).__name__}"] += 1
