"""Agent-run latency and load: `POST /agent/runs` against a running Iris, next to a bare Litestar SSE stream.

Starts a real server (`python -m app serve`, SQLite + local storage in a temp dir) and, with the offline
`local/vision` model, one uploaded image and a 185-word prompt (about 200 streamed content events):
- 30 sequential runs (after 3 warm-ups): time to first event (TTFE) and total run time, p50/p99;
- the same 30 requests against a bare Litestar app (defined here, run as `--baseline-server`, uvicorn,
  one process, like Iris) streaming the same number of LF-framed events of the same shape, and the
  Iris/baseline ratios (target: total run time p50 ratio <= 2.0: the agent machinery - auth, image
  fetch, persistence, event translation - may at most double the cost of a bare SSE stream);
- 500 runs started at once, each on its own thread with its own upload: errors (non-200, RUN_ERROR,
  no terminal event, exceptions) and lost messages (a run that finished but whose thread history is not
  exactly one user and one assistant message). Targets: 0 errors, 0 lost messages, all in <= 4 s.
- cross-process follow lag on PostgreSQL (a throwaway cluster, skipped visibly without initdb): two
  Iris processes share the database; runs stream on A while B follows each from the event log; for
  every event B receives live, the time after A received it. Target: p99 <= 50 ms.
Exits non-zero on any error or lost message (a missed ratio target is reported, not fatal).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import msgspec
from _iris import ROOT, add_model, dev_token, free_port, iris, running
from _results import Results, percentile
from litestar import Litestar, get, post
from litestar.response import Stream
from PIL import Image

MODEL_ID = "local/vision"
WARMUP = 3
SEQUENTIAL = 30
CONCURRENT = 500
CONCURRENT_TARGET_SECONDS = 4.0  # issue 15: 500 concurrent runs on one SQLite process
TIMEOUT = 120.0
RATIO_TARGET = 2.0
TERMINAL = ("RUN_FINISHED", "RUN_ERROR")
RESULTS = Results("runs")
_SENTENCE = (
    "the quick brown fox jumps over a lazy dog while seven bright kites drift above quiet harbour "
    "walls and an old lighthouse keeper counts gulls before the evening ferry leaves for distant islands"
)
_VOCABULARY = _SENTENCE.split()
# The local model streams one word per event: its label and image description (~13 words), "You said:",
# then this text, so 185 words give about 200 content events (counted and printed, not assumed).
PROMPT_WORDS = 185
PROMPT = " ".join(_VOCABULARY[i % len(_VOCABULARY)] for i in range(PROMPT_WORDS))
DEFAULT_CONTENT_EVENTS = 200  # baseline size when Iris could not tell us (endpoint missing)


@dataclass
class Outcome:
    """One streamed run as the client saw it."""

    status: int = 0
    ttfe: float | None = None
    total: float = 0.0
    types: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def content_events(self) -> int:
        return self.types.count("TEXT_MESSAGE_CONTENT")

    @property
    def finished(self) -> bool:
        return self.error is None and bool(self.types) and self.types[-1] == "RUN_FINISHED"


# --- the bare Litestar baseline (run as `python bench/runs.py --baseline-server PORT ...`) -------------


def baseline_app(content_events: int, total_events: int) -> Litestar:
    """One `POST /sse` route streaming `total_events` AG-UI-shaped frames, `content_events` of them deltas."""
    extra = max(0, total_events - content_events - 4)

    def events(thread_id: str, run_id: str) -> Iterator[dict[str, Any]]:
        message_id = str(uuid.uuid4())
        yield {"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id}
        yield {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"}
        for i in range(content_events):
            yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": _word(i) + " "}
        yield {"type": "TEXT_MESSAGE_END", "messageId": message_id}
        for _ in range(extra):
            yield {"type": "CUSTOM", "name": "usage", "value": {"outputTokens": content_events}}
        yield {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id}

    async def frames(thread_id: str, run_id: str) -> AsyncIterator[bytes]:
        # Each event is stamped, encoded and framed as it is sent, one ASGI message per event.
        for number, event in enumerate(events(thread_id, run_id), start=1):
            event["timestamp"] = time.time_ns() // 1_000_000
            yield b"id: %d\ndata: %s\n\n" % (number, msgspec.json.encode(event))

    @post("/sse", status_code=200)
    async def sse(data: dict[str, Any]) -> Stream:
        thread_id, run_id = str(data.get("threadId", "")), str(data.get("runId", ""))
        return Stream(
            frames(thread_id, run_id), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
        )

    @get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return Litestar([sse, healthz])


def serve_baseline(port: int, content_events: int, total_events: int) -> None:
    import uvicorn

    # Same as `python -m app serve`: one process, uvicorn's default loop, info logging (access log on).
    uvicorn.run(baseline_app(content_events, total_events), host="127.0.0.1", port=port, log_level="info")


def _word(i: int) -> str:
    return _VOCABULARY[i % len(_VOCABULARY)]


# --- client side ---------------------------------------------------------------------------------------


def solid_png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (256, 256), (30, 60, 220)).save(buffer, "PNG")
    return buffer.getvalue()


def run_body(thread_id: str, agui_part: dict[str, Any] | None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": PROMPT}]
    if agui_part is not None:
        content.append(agui_part)
    return {
        "threadId": thread_id,
        "runId": str(uuid.uuid4()),
        "protocolVersion": "1.0",
        "state": {},
        "messages": [{"id": str(uuid.uuid4()), "role": "user", "content": content}],
        "tools": [],
        "context": [],
        "forwardedProps": {"modelId": MODEL_ID},
    }


async def stream_run(client: httpx.AsyncClient, url: str, body: dict[str, Any], token: str | None) -> Outcome:
    """POST one run and read its SSE stream to the end; never raises."""
    headers = {"Accept": "text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    outcome = Outcome()
    start = time.perf_counter()
    try:
        async with client.stream("POST", url, json=body, headers=headers) as response:
            outcome.status = response.status_code
            if response.status_code != 200:
                text = (await response.aread()).decode(errors="replace")[:300]
                outcome.error = f"HTTP {response.status_code}: {text}"
                return outcome
            data: list[str] = []
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    if outcome.ttfe is None:
                        outcome.ttfe = time.perf_counter() - start
                    data.append(line[5:].removeprefix(" "))
                elif line == "" and data:
                    event = json.loads("\n".join(data))
                    data = []
                    outcome.types.append(str(event.get("type")))
                    if event.get("type") == "RUN_ERROR":
                        outcome.error = f"RUN_ERROR: {event.get('message')}"
        outcome.total = time.perf_counter() - start
    except Exception as exc:  # an exception is one of the errors this benchmark counts
        outcome.error = f"{type(exc).__name__}: {exc}"
        return outcome
    if outcome.error is None:
        if not outcome.types or outcome.types[-1] not in TERMINAL:
            last = outcome.types[-1] if outcome.types else "nothing"
            outcome.error = f"stream ended without a terminal event (last: {last})"
        elif outcome.types[0] != "RUN_STARTED":
            outcome.error = f"first event was {outcome.types[0]}, not RUN_STARTED"
    return outcome


async def upload(client: httpx.AsyncClient, base: str, token: str, png: bytes, thread_id: str) -> Any:
    response = await client.post(
        f"{base}/api/files",
        files={"file": ("bench.png", png, "image/png")},
        data={"threadId": thread_id},
        headers={"Authorization": f"Bearer {token}"},
    )
    if response.status_code != 201:
        raise RuntimeError(f"upload answered {response.status_code}: {response.text[:300]}")
    return response.json()["parts"]["agui"]


async def prepare_threads(base: str, token: str, png: bytes, count: int) -> list[tuple[str, dict[str, Any]]]:
    """`count` fresh threads, each with its own uploaded image (not timed)."""
    threads = [str(uuid.uuid4()) for _ in range(count)]
    async with httpx.AsyncClient(timeout=TIMEOUT, limits=httpx.Limits(max_connections=20)) as client:
        parts = await asyncio.gather(*(upload(client, base, token, png, t) for t in threads))
    return list(zip(threads, parts, strict=True))


async def sequential(url: str, bodies: Sequence[dict[str, Any]], token: str | None) -> list[Outcome]:
    """Runs one after another over one keep-alive client (the first WARMUP are warm-ups)."""
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        return [await stream_run(client, url, body, token) for body in bodies]


async def concurrent(url: str, bodies: Sequence[dict[str, Any]], token: str) -> tuple[float, list[Outcome]]:
    limits = httpx.Limits(max_connections=CONCURRENT, max_keepalive_connections=CONCURRENT)
    async with httpx.AsyncClient(timeout=TIMEOUT, limits=limits) as client:
        start = time.perf_counter()
        outcomes = await asyncio.gather(*(stream_run(client, url, body, token) for body in bodies))
        return time.perf_counter() - start, list(outcomes)


class HistoryShapeError(RuntimeError):
    """The thread-history answer has neither an `items` nor a `messages` list."""


async def history_roles(base: str, token: str, threads: Sequence[str]) -> list[Counter[str] | str]:
    """Messages per role for each thread, or an error text for that thread."""

    async def one(client: httpx.AsyncClient, thread_id: str) -> Counter[str] | str:
        response = await client.get(
            f"{base}/agent/threads/{thread_id}/messages", headers={"Authorization": f"Bearer {token}"}
        )
        if response.status_code != 200:
            return f"history answered {response.status_code}: {response.text[:200]}"
        payload = response.json()
        messages: Any = None
        if isinstance(payload, list):
            messages = payload
        elif isinstance(payload, dict):
            messages = next(
                (payload[k] for k in ("items", "messages") if isinstance(payload.get(k), list)), None
            )
        if messages is None:
            keys = sorted(payload) if isinstance(payload, dict) else type(payload).__name__
            raise HistoryShapeError(f"thread history has no 'items' or 'messages' list (got {keys})")
        return Counter(str(m.get("role")) if isinstance(m, dict) else "?" for m in messages)

    async with httpx.AsyncClient(timeout=TIMEOUT, limits=httpx.Limits(max_connections=20)) as client:
        return list(await asyncio.gather(*(one(client, t) for t in threads)))


def is_complete(roles: Counter[str] | str) -> bool:
    return (
        not isinstance(roles, str) and roles["user"] == 1 and roles["assistant"] == 1 and roles.total() == 2
    )


async def lost_messages(base: str, token: str, threads: Sequence[str]) -> tuple[list[str], int]:
    """Threads whose history is not one user + one assistant message; and how many of those were only late
    (complete on a second look 2 s later)."""
    first = await history_roles(base, token, threads)
    bad = [(t, roles) for t, roles in zip(threads, first, strict=True) if not is_complete(roles)]
    if not bad:
        return [], 0
    await asyncio.sleep(2)
    second = await history_roles(base, token, [t for t, _ in bad])
    late = sum(is_complete(roles) for roles in second)
    lost = [f"{t}: {roles if isinstance(roles, str) else dict(roles)}" for t, roles in bad]
    return lost, late


def summarise(label: str, outcomes: Sequence[Outcome]) -> tuple[float, float, float, float] | None:
    """Print TTFE and total p50/p99 of the successful runs; returns them (or None when none succeeded)."""
    good = [o for o in outcomes if o.finished and o.ttfe is not None]
    if not good:
        print(f"{label}: no successful runs")
        return None
    ttfe = [o.ttfe for o in good if o.ttfe is not None]
    total = [o.total for o in good]
    figures = (percentile(ttfe, 50), percentile(ttfe, 99), percentile(total, 50), percentile(total, 99))
    ms = [f * 1000 for f in figures]
    for name, value in zip(("ttfe_p50", "ttfe_p99", "total_p50", "total_p99"), ms, strict=True):
        RESULTS.figure(f"{label}_{name}", value, "ms")
    print(
        f"{label:<9} TTFE p50 {ms[0]:7.2f} ms  p99 {ms[1]:7.2f} ms   "
        f"total p50 {ms[2]:7.2f} ms  p99 {ms[3]:7.2f} ms   ({len(good)}/{len(outcomes)} runs ok)"
    )
    return figures


def report_errors(label: str, outcomes: Sequence[Outcome], lines: list[str]) -> int:
    """Add the commonest error texts to `lines`; returns how many runs failed."""
    errors = [o.error for o in outcomes if o.error is not None]
    lines.extend(f"  {label} error x{count}: {text}" for text, count in Counter(errors).most_common(5))
    return len(errors)


@dataclass
class IrisFigures:
    """What the Iris half measured: sequential outcomes, the stream's size, report lines, failures."""

    sequential: list[Outcome] = field(default_factory=list)
    content_events: int = DEFAULT_CONTENT_EVENTS
    total_events: int = DEFAULT_CONTENT_EVENTS + 4
    lines: list[str] = field(default_factory=list)
    failures: int = 0


def measure_iris(tmp: str, png: bytes) -> IrisFigures:
    """Start Iris; 3 + 30 sequential runs, then CONCURRENT concurrent ones and every thread's history."""
    figures = IrisFigures()
    with iris(tmp) as (base, token, _):
        runs_url = f"{base}/agent/runs"
        threads = asyncio.run(prepare_threads(base, token, png, WARMUP + SEQUENTIAL))
        outcomes = asyncio.run(sequential(runs_url, [run_body(*thread) for thread in threads], token))
        if outcomes[0].status in (404, 405):
            figures.lines.append(
                f"POST /agent/runs answered {outcomes[0].status}: no endpoint yet, Iris not measured"
            )
            figures.failures += 1
            return figures
        warm, figures.sequential = outcomes[:WARMUP], outcomes[WARMUP:]
        figures.failures += report_errors("warm-up", warm, figures.lines)
        figures.failures += report_errors("sequential", figures.sequential, figures.lines)
        sample = next((o for o in [*figures.sequential, *warm] if o.finished), None)
        if sample is not None:
            figures.content_events, figures.total_events = sample.content_events, len(sample.types)
            kinds = ", ".join(f"{kind} x{n}" for kind, n in Counter(sample.types).items())
            figures.lines.insert(0, f"one Iris run streams {figures.total_events} events: {kinds}")
        done = [t for (t, _), o in zip(threads, outcomes, strict=True) if o.finished]
        figures.failures += concurrent_part(base, runs_url, token, png, done, figures.lines)
    return figures


def measure_baseline(tmp: str, content_events: int, total_events: int) -> list[Outcome]:
    """Start the bare Litestar app on the same event counts; 3 + 30 sequential requests."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, str(Path(__file__).resolve()), "--baseline-server", str(port)]
    command += [str(content_events), str(total_events)]
    with running(command, dict(os.environ), Path(tmp) / "baseline.log", f"{base}/healthz"):
        bodies = [run_body(str(uuid.uuid4()), None) for _ in range(WARMUP + SEQUENTIAL)]
        return asyncio.run(sequential(f"{base}/sse", bodies, None))[WARMUP:]


FOLLOW_RUNS = 6
FOLLOW_WORDS = 60
FOLLOW_LAG_TARGET_MS = 50.0
SLOW = {"name": "Slow", "provider": "local", "modelId": "slow", "type": "vision", "options": {"delayMs": 20}}


async def _timed_events(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    token: str,
    body: Any,
    seen: dict[str, float],
    started: asyncio.Event | None = None,
) -> None:
    """Read an SSE stream; ``seen[id]`` is when each event id arrived (perf_counter); ``started`` is set
    once three events arrived."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    async with client.stream(method, url, json=body, headers=headers) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{method} {url} answered {response.status_code}")
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                seen[line[3:].strip()] = time.perf_counter()
                if started is not None and len(seen) >= 3:
                    started.set()
    if started is not None:
        started.set()


async def _follow_one(a: str, b: str, token: str) -> list[float]:
    """One run on A followed from B once A has streamed its first events; lags (s) of B's live events."""
    words = " ".join(_word(i) for i in range(FOLLOW_WORDS))
    body = run_body(str(uuid.uuid4()), None)
    body["messages"][0]["content"] = [{"type": "text", "text": words}]
    body["forwardedProps"] = {"modelId": "local/slow"}
    on_a: dict[str, float] = {}
    on_b: dict[str, float] = {}
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        streaming = asyncio.Event()
        running_a = asyncio.create_task(
            _timed_events(client, "POST", f"{a}/agent/runs", token, body, on_a, streaming)
        )
        await streaming.wait()
        attached = time.perf_counter()
        url = f"{b}/agent/runs/{body['runId']}/events?after=0"
        await asyncio.gather(running_a, _timed_events(client, "GET", url, token, None, on_b))
    if set(on_a) != set(on_b):
        raise RuntimeError(f"B saw {len(on_b)} events, A {len(on_a)}")
    return [on_b[i] - on_a[i] for i in on_a if on_a[i] > attached + 0.05]


def follow_lag(tmp: str) -> tuple[list[str], int]:
    """Report lines and failures of the cross-process follow part (PostgreSQL only)."""
    sys.path.insert(0, str(ROOT))
    from tests.support.postgres import TemporaryCluster

    reason = TemporaryCluster.unavailable_reason()
    if reason:
        return [f"follow lag on PostgreSQL: skipped: {reason}"], 0
    cluster = TemporaryCluster()
    url = cluster.start()
    try:
        shared = {"IRIS_DATABASE_URL": url, "IRIS_JWT_SECRET": uuid.uuid4().hex * 2}
        with iris(f"{tmp}/a", environ=shared) as (a, token, _), iris(f"{tmp}/b", environ=shared) as (b, _, _):
            admin = dev_token({**os.environ, **shared, "IRIS_DATA_DIR": f"{tmp}/a/data"}, "root", "admin")
            add_model(a, admin, SLOW)
            load_before = os.getloadavg()[0]

            async def all_runs() -> list[list[float]]:
                return list(await asyncio.gather(*(_follow_one(a, b, token) for _ in range(FOLLOW_RUNS))))

            lags = [lag * 1000 for run in asyncio.run(all_runs()) for lag in run]
            load_after = os.getloadavg()[0]
    finally:
        cluster.stop()
    if not lags:
        return ["follow lag on PostgreSQL: no live events measured"], 1
    p99 = percentile(lags, 99)
    RESULTS.figure("follow_lag_postgresql_p50", percentile(lags, 50), "ms")
    RESULTS.figure(
        "follow_lag_postgresql_p99",
        p99,
        "ms",
        target=f"<= {FOLLOW_LAG_TARGET_MS:.0f}",
        met=p99 <= FOLLOW_LAG_TARGET_MS,
    )
    RESULTS.figure("follow_lag_load_average", load_after, "1-minute")
    met = "met" if p99 <= FOLLOW_LAG_TARGET_MS else "NOT met"
    return [
        f"follow lag on PostgreSQL ({FOLLOW_RUNS} concurrent runs on A followed from B,"
        f" {len(lags)} live events, load {load_before:.2f} -> {load_after:.2f}):"
        f" p50 {percentile(lags, 50):.1f} ms,"
        f" p99 {p99:.1f} ms, max {max(lags):.1f} ms  (target p99 <= {FOLLOW_LAG_TARGET_MS:.0f} ms: {met})"
    ], 0


def main() -> int:
    png = solid_png()
    with tempfile.TemporaryDirectory(prefix="iris-bench-") as tmp:
        iris = measure_iris(tmp, png)
        bare = measure_baseline(tmp, iris.content_events, iris.total_events)
        follow_lines, follow_failures = follow_lag(tmp)
    lines: list[str] = []
    failures = iris.failures + follow_failures + report_errors("baseline", bare, lines)
    print(
        f"sequential: {SEQUENTIAL} runs one after another (after {WARMUP} warm-ups), {MODEL_ID}, one 256x256 "
        f"PNG, {iris.content_events} TEXT_MESSAGE_CONTENT events; baseline: bare Litestar Stream, same counts"
    )
    iris_p = summarise("iris", iris.sequential) if iris.sequential else None
    bare_p = summarise("baseline", bare)
    if iris_p is not None and bare_p is not None:
        ttfe_ratio, total_ratio = iris_p[0] / bare_p[0], iris_p[2] / bare_p[2]
        met = "met" if total_ratio <= RATIO_TARGET else "NOT met"
        print(f"ratio iris/baseline total p50: {total_ratio:5.2f}x  (target <= {RATIO_TARGET}: {met})")
        RESULTS.figure(
            "ratio_total_p50", total_ratio, "x", target=f"<= {RATIO_TARGET}", met=total_ratio <= RATIO_TARGET
        )
        RESULTS.figure("ratio_ttfe_p50", ttfe_ratio, "x")
        print(f"ratio iris/baseline TTFE p50:  {ttfe_ratio:5.2f}x  (total p99: {iris_p[3] / bare_p[3]:.2f}x)")
    else:
        print(f"ratio iris/baseline total p50: n/a  (target <= {RATIO_TARGET}: NOT met)")
    for line in [*iris.lines, *lines, *follow_lines]:
        print(line)
    RESULTS.write()
    return 1 if failures else 0


def concurrent_part(
    base: str, runs_url: str, token: str, png: bytes, seq_threads: Sequence[str], lines: list[str]
) -> int:
    """CONCURRENT uploads, then as many runs at once, then every thread's history; reports the failures."""
    threads = asyncio.run(prepare_threads(base, token, png, CONCURRENT))
    elapsed, outcomes = asyncio.run(concurrent(runs_url, [run_body(*t) for t in threads], token))
    errors = sum(o.error is not None for o in outcomes)
    finished = [t for (t, _), o in zip(threads, outcomes, strict=True) if o.finished]
    try:
        lost, late = asyncio.run(lost_messages(base, token, finished))
        seq_lost, seq_late = asyncio.run(lost_messages(base, token, seq_threads))
    except HistoryShapeError as exc:
        lines.append(f"lost messages: cannot tell: {exc}")
        lost, late, seq_lost, seq_late = ["history unreadable"], 0, [], 0
    totals = [o.total * 1000 for o in outcomes if o.finished]
    spread = (
        f"per-run total p50 {percentile(totals, 50):.0f} ms, p99 {percentile(totals, 99):.0f} ms"
        if totals
        else "no run finished"
    )
    in_time = elapsed <= CONCURRENT_TARGET_SECONDS
    lines.append(
        f"concurrent: {CONCURRENT} runs at once (own thread + upload each): {elapsed:.2f} s"
        f"  (target <= {CONCURRENT_TARGET_SECONDS:g} s: {'met' if in_time else 'NOT met'}); {spread}"
    )
    lines.append(f"errors: {errors}/{CONCURRENT}  (target 0: {'met' if errors == 0 else 'NOT met'})")
    RESULTS.figure(
        "concurrent_elapsed", elapsed, "s", target=f"<= {CONCURRENT_TARGET_SECONDS:g}", met=in_time
    )
    RESULTS.figure("concurrent_errors", errors, f"of {CONCURRENT}", target="0", met=errors == 0)
    RESULTS.figure("concurrent_lost_messages", len(lost), f"of {len(finished)}", target="0", met=not lost)
    report_errors("concurrent", outcomes, lines)
    late_note = f" ({late} appeared within 2 s)" if late else ""
    lines.append(
        f"lost messages: {len(lost)}/{len(finished)} finished runs{late_note}"
        f"  (target 0: {'met' if not lost else 'NOT met'})"
    )
    lines.extend(f"  lost: {text}" for text in lost[:5])
    if seq_lost:
        lines.append(f"lost messages in the sequential runs' threads: {len(seq_lost)} ({seq_late} late)")
        lines.extend(f"  lost: {text}" for text in seq_lost[:5])
    return errors + len(lost) + len(seq_lost)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--baseline-server":
        parser = argparse.ArgumentParser(description="the bare Litestar SSE baseline server")
        parser.add_argument("--baseline-server", type=int, required=True, metavar="PORT")
        parser.add_argument("content_events", type=int)
        parser.add_argument("total_events", type=int)
        args = parser.parse_args()
        serve_baseline(args.baseline_server, args.content_events, args.total_events)
        sys.exit(0)
    sys.exit(main())
