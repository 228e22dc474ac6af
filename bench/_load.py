"""A load generator that is not the bottleneck: several client processes, each with its own event loop.

On two shared cores one Python client reading 500 SSE streams is slower than the server it measures, so
the benches send load from forked worker processes (uvloop when installed). Each worker warms its
connections, waits at a barrier with the others and the parent (which then reads the server's CPU), runs
its share (all at once, or a closed loop until a deadline) and reports its outcomes and its own CPU time.
:class:`Load` says how busy the client was: a worker runs one loop, so it is saturated near one core
(> :data:`SATURATED` of it), and the machine is saturated when client and server together use more than
that share of every core.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

SATURATED = 0.85  # share of a core (per worker) or of the machine above which the client is the limit
BARRIER_SECONDS = 600.0
TIMEOUT = 120.0


@dataclass
class Outcome:
    """One streamed request as the client saw it (seconds from its start; 0.0 when never reached)."""

    status: int = 0
    first_byte: float = 0.0
    first_text: float = 0.0
    total: float = 0.0
    types: list[str] = field(default_factory=list)  # AG-UI event types in order (AG-UI streams only)
    error: str | None = None
    sent: int = -1  # which of its job's bodies it sent

    @property
    def finished(self) -> bool:
        """Read to its end without an error (an AG-UI stream also ended with ``RUN_FINISHED``)."""
        return self.error is None and (not self.types or self.types[-1] == "RUN_FINISHED")


@dataclass
class Job:
    """One worker's share: where to send, and the bodies in order (one request each)."""

    url: str
    headers: dict[str, str]
    bodies: Sequence[dict[str, Any]]
    concurrency: int  # requests in flight at once; len(bodies) for a burst
    seconds: float | None = None  # closed loop until this deadline (None: send every body once)
    warm: Sequence[dict[str, Any]] = ()  # sent before the barrier, not measured
    agui: bool = True  # AG-UI stream (every event's type kept) or OpenAI chunks


@dataclass
class Report:
    """What one worker sends back."""

    worker: int  # its job's index
    outcomes: list[Outcome]
    cpu: float  # this process's CPU seconds in the measured window
    wall: float  # its measured window (s)
    ended: float  # time.monotonic() at its end (one clock for every process on Linux)


@dataclass
class Load:
    """One measured window: every outcome, and how busy the client and the server were."""

    outcomes: list[Outcome]
    elapsed: float
    reports: list[Report]
    server_cpu: float
    jobs: Sequence[Job]
    cores: int = field(default_factory=lambda: os.cpu_count() or 1)

    def bodies(self) -> list[dict[str, Any]]:
        """The body each outcome sent, in the order of :attr:`outcomes`."""
        return [self.jobs[r.worker].bodies[o.sent] for r in self.reports for o in r.outcomes]

    @property
    def ok(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.finished]

    @property
    def errors(self) -> list[str]:
        return [o.error or "no RUN_FINISHED" for o in self.outcomes if not o.finished]

    @property
    def client_cpu(self) -> float:
        return sum(r.cpu for r in self.reports)

    @property
    def busiest_worker(self) -> float:
        """The largest share of one core that one worker used."""
        return max((r.cpu / r.wall for r in self.reports if r.wall > 0), default=0.0)

    @property
    def machine_share(self) -> float:
        """Client + server CPU as a share of all cores over the window."""
        return (self.client_cpu + self.server_cpu) / max(1e-9, self.elapsed * self.cores)

    @property
    def saturated(self) -> bool:
        return self.busiest_worker > SATURATED or self.machine_share > SATURATED

    def per_request_ms(self, cpu: float) -> float:
        return cpu * 1000 / max(1, len(self.outcomes))

    def describe(self) -> str:
        """One line: client and server CPU beside each other, and whether the client was the limit."""
        verdict = (
            "SATURATED (figures bounded by the machine, not Iris)" if self.saturated else "not saturated"
        )
        return (
            f"client: {len(self.reports)} processes, CPU {self.client_cpu:.2f} s"
            f" ({self.per_request_ms(self.client_cpu):.1f} ms/request, busiest worker"
            f" {self.busiest_worker:.0%} of a core); server CPU {self.server_cpu:.2f} s"
            f" ({self.per_request_ms(self.server_cpu):.1f} ms/request); client + server"
            f" {self.machine_share:.0%} of {self.cores} cores; client {verdict}"
        )


def _is_text(payload: Any, agui: bool) -> bool:
    """Whether ``payload`` carries answer text: an AG-UI text event, or (``agui`` false) a Chat
    Completions chunk's content or a Responses API ``response.output_text.delta``."""
    if not isinstance(payload, dict):
        return False
    if agui:
        return payload.get("type") == "TEXT_MESSAGE_CONTENT"
    if payload.get("type") == "response.output_text.delta":
        return bool(payload.get("delta"))
    return any((choice.get("delta") or {}).get("content") for choice in payload.get("choices") or ())


async def stream(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], body: Any, agui: bool
) -> Outcome:
    """POST one streaming request and read it to the end; never raises. An AG-UI stream must start with
    ``RUN_STARTED`` and end with a terminal event; a ``RUN_ERROR`` is an error."""
    outcome = Outcome()
    start = time.perf_counter()
    try:
        async with client.stream("POST", url, json=body, headers=headers) as response:
            outcome.status = response.status_code
            if response.status_code != 200:
                text = (await response.aread()).decode(errors="replace")[:200]
                outcome.error = f"HTTP {response.status_code}: {text}"
                return outcome
            pending = b""
            async for raw in response.aiter_raw():
                if not outcome.first_byte:
                    outcome.first_byte = time.perf_counter() - start
                if not agui and outcome.first_text:
                    continue  # OpenAI chunks: nothing more to learn once text arrived
                pending += raw
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if not line.startswith(b"data:") or line[5:].strip() in (b"", b"[DONE]"):
                        continue
                    try:
                        payload = json.loads(line[5:])
                    except ValueError:
                        continue
                    if agui:
                        kind = str(payload.get("type"))
                        outcome.types.append(kind)
                        if kind == "RUN_ERROR":
                            outcome.error = f"RUN_ERROR: {payload.get('message')}"
                    if not outcome.first_text and _is_text(payload, agui):
                        outcome.first_text = time.perf_counter() - start
        outcome.total = time.perf_counter() - start
    except Exception as exc:  # counted, not fatal
        outcome.error = f"{type(exc).__name__}: {exc}"
        return outcome
    if outcome.error is None and agui:
        if not outcome.types or outcome.types[-1] not in ("RUN_FINISHED", "RUN_ERROR"):
            last = outcome.types[-1] if outcome.types else "nothing"
            outcome.error = f"stream ended without a terminal event (last: {last})"
        elif outcome.types[0] != "RUN_STARTED":
            outcome.error = f"first event was {outcome.types[0]}, not RUN_STARTED"
    elif outcome.error is None and not outcome.first_text:
        outcome.error = "no answer text in the stream"
    return outcome


async def _send_all(
    client: httpx.AsyncClient, job: Job, bodies: Sequence[dict[str, Any]], deadline: float | None
) -> list[Outcome]:
    supply = iter(enumerate(bodies))
    outcomes: list[Outcome] = []

    async def worker() -> None:
        while deadline is None or time.perf_counter() < deadline:
            sent, body = next(supply, (-1, None))
            if body is None:
                return
            outcome = await stream(client, job.url, job.headers, body, job.agui)
            outcome.sent = sent
            outcomes.append(outcome)

    await asyncio.gather(*(worker() for _ in range(max(1, min(job.concurrency, len(bodies))))))
    return outcomes


async def _work(worker: int, job: Job, barrier: Any) -> Report:
    limits = httpx.Limits(max_connections=job.concurrency, max_keepalive_connections=job.concurrency)
    async with httpx.AsyncClient(timeout=TIMEOUT, limits=limits) as client:
        if job.warm:
            await _send_all(client, job, job.warm, None)
        await asyncio.to_thread(barrier.wait, BARRIER_SECONDS)  # all warm: the parent reads the server
        await asyncio.to_thread(barrier.wait, BARRIER_SECONDS)  # then every worker starts at once
        cpu, start = time.process_time(), time.perf_counter()
        deadline = None if job.seconds is None else start + job.seconds
        outcomes = await _send_all(client, job, job.bodies, deadline)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return Report(worker, outcomes, cpu, wall, time.monotonic())


def _child(worker: int, job: Job, barrier: Any, results: Any) -> None:
    try:
        import uvloop

        runner: Callable[..., Report] = uvloop.run
    except ImportError:
        runner = asyncio.run
    try:
        results.put(runner(_work(worker, job, barrier)))
    except BaseException as exc:  # the parent must hear of it, or it waits at the barrier for ever
        barrier.abort()
        results.put(exc)
        raise


def split(items: Sequence[Any], parts: int) -> list[list[Any]]:
    """``items`` dealt round-robin into ``parts`` lists."""
    return [list(items[i::parts]) for i in range(parts)]


def run(jobs: Sequence[Job], server_cpu: Callable[[], float]) -> Load:
    """Run every job in its own forked process at once; ``server_cpu`` is read when all have warmed
    up and again when all have finished."""
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(len(jobs) + 1)
    results = context.Queue()
    children = [
        context.Process(target=_child, args=(i, job, barrier, results), daemon=True)
        for i, job in enumerate(jobs)
    ]
    for child in children:
        child.start()
    try:
        barrier.wait(BARRIER_SECONDS)
        cpu = server_cpu()
        barrier.wait(BARRIER_SECONDS)
        start = time.monotonic()
        reports: list[Report] = []
        for _ in children:
            got = results.get(timeout=BARRIER_SECONDS)
            if isinstance(got, BaseException):
                raise RuntimeError(f"a load worker failed: {got!r}") from got
            reports.append(got)
        cpu = server_cpu() - cpu
    finally:
        for child in children:
            child.join(10)
            if child.is_alive():
                child.kill()
    reports.sort(key=lambda r: r.worker)
    elapsed = max(r.ended for r in reports) - start
    return Load([o for r in reports for o in r.outcomes], elapsed, reports, cpu, jobs)


def burst(
    url: str,
    headers: dict[str, str],
    bodies: Sequence[dict[str, Any]],
    processes: int,
    server_cpu: Callable[[], float],
    *,
    agui: bool = True,
) -> Load:
    """Every body sent at once, spread over ``processes`` client processes."""
    shares = [share for share in split(bodies, processes) if share]
    return run([Job(url, headers, share, len(share), agui=agui) for share in shares], server_cpu)


def closed_loop(
    url: str,
    headers: dict[str, str],
    bodies: Sequence[dict[str, Any]],
    *,
    clients: int,
    processes: int,
    seconds: float | None,
    warm_per_client: int,
    server_cpu: Callable[[], float],
    agui: bool = True,
) -> Load:
    """``clients`` clients (spread over ``processes``), each sending its next request when the last one
    ended, for ``seconds``; the first ``warm_per_client`` bodies of each client warm up, unmeasured."""
    processes = max(1, min(processes, clients))
    warm_count = clients * warm_per_client
    shares = zip(
        split(range(clients), processes),
        split(bodies[warm_count:], processes),
        split(bodies[:warm_count], processes),
        strict=True,
    )
    jobs = [Job(url, headers, share, len(owned), seconds, warm, agui) for owned, share, warm in shares]
    return run(jobs, server_cpu)
