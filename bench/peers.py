"""Iris next to its peer: direct upstream vs LiteLLM proxy vs Iris ``/agent/runs``, ``/api/llm/chat``,
``/v1/chat/completions`` (the OpenAI gateway: the same request body as the proxy gets, the like-for-like
comparison) and ``/v1/responses`` (the same question as a Responses API request; LiteLLM's own
``/v1/responses`` would call the upstream's Responses API, which this upstream does not serve).

Every target talks to the same fake OpenAI upstream (its own process, run as ``--upstream-server``):
one streaming Chat Completions request carrying a ~100 KB PNG, answered with 50 content chunks. The
LiteLLM proxy (the optional ``bench`` extra, ``litellm[proxy]``, in ``.venv-bench``) is started and
stopped here on loopback; without it the script says "peer skipped: …" and measures the rest. Iris runs
through the bench launcher ``_sqlcount.py`` (SQLite, local storage) with an ``openai`` model pointing at
the upstream.

Phases (the 1-minute load average is recorded at the start and end of each: the machine is shared):
- sequential, paired: rounds of one request per target in rotating order; medians over rounds of the
  time added to the direct request of the same round: first byte, first answer text, total. The proxy
  and Iris are measured in separate passes, each beside the direct request: the proxy keeps working
  after it has answered (its logging and spend callbacks), and on 2 shared cores that work landed in
  the timing of whatever request came next;
- closed loop: 16 clients, each sending its next request when the last one ended: req/s, first byte
  and total p50/p99, server CPU per request (process tree, /proc) and peak RSS;
- upstream TCP connections opened per request, counted by the upstream (a new client port is a new
  connection), in the sequential phase, and in the closed loop (warm-up included) those beyond the
  loop's concurrency, which a pool that reuses its connections never opens;
- SQL statements and commits per Iris request (``_sqlcount.py``'s counters around a batch).
Prints one table with the issue's targets marked met / NOT met and writes it as JSON under
``bench/results/``. Bounded: about 2 minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from _iris import (
    add_model,
    cpu_seconds,
    dev_token,
    free_port,
    fresh_database,
    iris,
    iris_processes,
    load,
    process_tree,
    running,
    started,
    wait_up,
)
from _load import closed_loop as closed_loop_load
from _results import Results
from PIL import Image

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
KEY = "sk-bench-0000"
LITELLM_KEY = "sk-" + uuid.uuid4().hex + uuid.uuid4().hex  # the proxy refuses to start without a strong one
CHUNKS = 50
WARM_ROUNDS = 8
ROUNDS = 50
CLIENTS = 16
LOOP_WARM = 4  # requests per client before the measured window (the pools grow to the peak concurrency)
LOOP_SECONDS = 6.0
LOOP_MAX = 400  # measured requests per target at most (each /agent/runs needs its own uploaded thread)
CLIENT_PROCESSES = 4  # the closed loops' clients are spread over this many processes (bench/_load.py)
POSTGRESQL = True  # the PostgreSQL loops (--no-postgresql skips them)
SQL_BATCH = 20
LITELLM_STARTUP = 300.0  # seconds: importing the proxy takes tens of seconds, minutes at load 15
TIMEOUT = 60.0
DIRECT, LITELLM, RUNS, CHAT = "direct", "litellm", "iris /agent/runs", "iris /api/llm/chat"
GATEWAY = "iris /v1/chat/completions"
RESPONSES = "iris /v1/responses"
TARGETS = (DIRECT, LITELLM, RUNS, CHAT, GATEWAY, RESPONSES)
PROMPT = "What is in this picture? Describe it in one sentence."

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


# --- the fake upstream (``python bench/peers.py --upstream-server PORT``) --------------------------------


class Upstream:
    """OpenAI's streamed Chat Completions in 50 content chunks; counts the connections requests came on."""

    def __init__(self) -> None:
        self.peers: set[tuple[str, int]] = set()
        self.new: list[bool] = []  # per request: did it come on a connection not seen before

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] == "/stats":
            body = json.dumps({"requests": len(self.new), "connections": len(self.peers), "new": self.new})
            await _respond(send, 200, "application/json", body.encode())
            return
        if scope["path"] == "/healthz":
            await _respond(send, 200, "text/plain", b"ok")
            return
        while (await receive()).get("more_body", False):
            pass
        peer = tuple(scope["client"])
        self.new.append(peer not in self.peers)
        self.peers.add((str(peer[0]), int(peer[1])))
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream; charset=utf-8")],
            }
        )
        for frame in _frames():
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _respond(send: Send, status: int, media_type: str, body: bytes) -> None:
    headers = [(b"content-type", media_type.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _frames() -> Iterator[bytes]:
    cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
        choices = [] if usage else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        payload = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": 1_760_000_000,
            "model": "gpt-4o-2024-08-06",
            "choices": choices,
            "usage": usage,
        }
        return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"

    yield chunk({"role": "assistant", "content": ""})
    for i in range(CHUNKS):
        yield chunk({"content": f"word{i} "})
    yield chunk({}, "stop")
    yield chunk({}, usage={"prompt_tokens": 300, "completion_tokens": CHUNKS, "total_tokens": 300 + CHUNKS})
    yield b"data: [DONE]\n\n"


def serve_upstream(port: int) -> None:
    import uvicorn

    # Real vendors keep idle connections for a minute or more; uvicorn's default is 5 s.
    uvicorn.run(
        Upstream(), host="127.0.0.1", port=port, log_level="warning", access_log=False, timeout_keep_alive=300
    )


# --- measuring one request -----------------------------------------------------------------------------


@dataclass
class Timing:
    first_byte: float = 0.0
    first_text: float = 0.0
    total: float = 0.0
    error: str | None = None


@dataclass
class Target:
    """How to send one request to a target: URL, headers, and a body per request."""

    name: str
    url: str
    headers: dict[str, str]
    body: Callable[[], dict[str, Any]]
    agui: bool
    pids: list[int] = field(default_factory=list)


def _is_text(payload: Any, agui: bool) -> bool:
    if not isinstance(payload, dict):
        return False
    if agui:
        return payload.get("type") == "TEXT_MESSAGE_CONTENT"
    if payload.get("type") == "response.output_text.delta":  # the Responses API
        return bool(payload.get("delta"))
    return any((choice.get("delta") or {}).get("content") for choice in payload.get("choices") or ())


async def one(client: httpx.AsyncClient, target: Target) -> Timing:
    """Send one streaming request and read it to the end; never raises."""
    timing = Timing()
    body = target.body()
    start = time.perf_counter()
    try:
        async with client.stream("POST", target.url, json=body, headers=target.headers) as response:
            if response.status_code != 200:
                text = (await response.aread()).decode(errors="replace")[:200]
                timing.error = f"HTTP {response.status_code}: {text}"
                return timing
            pending = b""
            async for raw in response.aiter_raw():
                if not timing.first_byte:
                    timing.first_byte = time.perf_counter() - start
                if timing.first_text:
                    continue
                pending += raw
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.startswith(b"data:") and line[5:].strip() not in (b"", b"[DONE]"):
                        try:
                            found = _is_text(json.loads(line[5:]), target.agui)
                        except ValueError:
                            continue
                        if found:
                            timing.first_text = time.perf_counter() - start
                            break
        timing.total = time.perf_counter() - start
        if not timing.first_text:
            timing.error = "no answer text in the stream"
    except Exception as exc:  # counted, not fatal
        timing.error = f"{type(exc).__name__}: {exc}"
    return timing


# --- process figures -----------------------------------------------------------------------------------


def peak_rss_mib(pid: int) -> float:
    total = 0
    for p in process_tree(pid):
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                total += int(line.split()[1])
    return total / 1024


# --- phases --------------------------------------------------------------------------------------------


@dataclass
class Figures:
    """Everything measured, per target (JSON-able)."""

    load: dict[str, list[float]] = field(default_factory=dict)
    sequential: dict[str, dict[str, float]] = field(default_factory=dict)
    loop: dict[str, dict[str, float]] = field(default_factory=dict)
    connections: dict[str, dict[str, float]] = field(default_factory=dict)
    sql: dict[str, dict[str, float]] = field(default_factory=dict)
    errors: dict[str, list[str]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    clients: dict[str, str] = field(default_factory=dict)  # per closed loop: the client's CPU and saturation


def _ms(value: float) -> float:
    return round(value * 1000, 2)


def _pct(values: Sequence[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


async def upstream_stats(client: httpx.AsyncClient, upstream: str) -> dict[str, Any]:
    stats: dict[str, Any] = (await client.get(f"{upstream}/stats")).json()
    return stats


async def sequential(targets: Sequence[Target], upstream: str, figures: Figures, *, phase: str) -> None:
    """Paired rounds of ``targets`` (the direct one first); also which upstream requests came on a new
    connection, per target."""
    figures.load[f"sequential {phase}"] = [load()]
    order: list[str] = []
    times: dict[str, list[Timing]] = {t.name: [] for t in targets}
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        for round_ in range(WARM_ROUNDS + ROUNDS):
            if round_ == WARM_ROUNDS:
                base = (await upstream_stats(client, upstream))["requests"]
                order.clear()
            rotation = round_ % len(targets)
            for target in [*targets[rotation:], *targets[:rotation]]:
                timing = await one(client, target)
                if round_ >= WARM_ROUNDS:
                    times[target.name].append(timing)
                    order.append(target.name)
        new = (await upstream_stats(client, upstream))["new"][base:]
    figures.load[f"sequential {phase}"].append(load())
    direct = times[DIRECT]
    for name, series in times.items():
        errors = [t.error for t in series if t.error]
        if errors:
            figures.errors[f"sequential {phase} {name}"] = errors[:3]
        ok = [(t, d) for t, d in zip(series, direct, strict=True) if not t.error and not d.error]
        row = {
            "first_byte_p50_ms": _ms(statistics.median(t.first_byte for t, _ in ok)),
            "first_text_p50_ms": _ms(statistics.median(t.first_text for t, _ in ok)),
            "total_p50_ms": _ms(statistics.median(t.total for t, _ in ok)),
        }
        if name != DIRECT:
            row |= {
                "added_first_byte_ms": _ms(statistics.median(t.first_byte - d.first_byte for t, d in ok)),
                "added_first_text_ms": _ms(statistics.median(t.first_text - d.first_text for t, d in ok)),
                "added_total_ms": _ms(statistics.median(t.total - d.total for t, d in ok)),
            }
        figures.sequential[name] = row
    if len(new) == len(order):  # one upstream request per client request, one at a time: they line up
        for name in times:
            opened = sum(flag for flag, who in zip(new, order, strict=True) if who == name)
            figures.connections.setdefault(name, {})["sequential_per_request"] = round(
                opened / max(1, order.count(name)), 3
            )
    else:
        figures.errors[f"sequential {phase} connections"] = [
            f"{len(new)} upstream requests for {len(order)} sent"
        ]


def closed_loop(
    target: Target, upstream: str, figures: Figures, *, clients: int = CLIENTS, label: str | None = None
) -> None:
    """``clients`` clients back to back from CLIENT_PROCESSES processes (``_load``): warm-up, then a
    measured window (time- and count-bounded); server and client CPU per request beside each other."""
    label = label or target.name
    figures.load[f"loop {label}"] = [load()]
    before_warm_up = httpx.get(f"{upstream}/stats", timeout=TIMEOUT).json()

    def server_cpu() -> float:  # read when the window opens and closes
        return sum(cpu_seconds(pid) for pid in target.pids)

    measured = closed_loop_load(
        target.url,
        target.headers,
        [target.body() for _ in range(clients * LOOP_WARM + LOOP_MAX)],
        clients=clients,
        processes=CLIENT_PROCESSES,
        seconds=LOOP_SECONDS,
        warm_per_client=LOOP_WARM,
        server_cpu=server_cpu,
        agui=target.agui,
    )
    figures.load[f"loop {label}"].append(load())
    ok, errors = (
        [r for r in measured.outcomes if not r.error],
        [r.error for r in measured.outcomes if r.error],
    )
    if errors:
        figures.errors[f"loop {label}"] = errors[:3]
    row: dict[str, Any] = {
        "requests": len(measured.outcomes),
        "errors": len(errors),
        "req_per_s": round(len(ok) / measured.elapsed, 1),
        "first_byte_p50_ms": _ms(_pct([r.first_byte for r in ok], 50)),
        "first_byte_p99_ms": _ms(_pct([r.first_byte for r in ok], 99)),
        "first_text_p99_ms": _ms(_pct([r.first_text for r in ok], 99)),
        "total_p99_ms": _ms(_pct([r.total for r in ok], 99)),
        "client_cpu_per_request_ms": round(measured.per_request_ms(measured.client_cpu), 2),
        "client_busiest_worker": round(measured.busiest_worker, 2),
        "client_saturated": measured.saturated,
    }
    if target.pids:
        row |= {
            "cpu_per_request_ms": round(measured.per_request_ms(measured.server_cpu), 2),
            "peak_rss_mib": 0.0,
        }
    figures.loop[label] = row
    figures.clients[label] = measured.describe()
    # A client's first requests may not overlap the others', so the window can still see the pool grow
    # to ``clients``: what counts as not reused is every connection beyond the loop's concurrency.
    after = httpx.get(f"{upstream}/stats", timeout=TIMEOUT).json()
    served = after["requests"] - before_warm_up["requests"]
    beyond = max(0, after["connections"] - before_warm_up["connections"] - clients)
    figures.connections.setdefault(label, {})["loop_per_request"] = round(beyond / max(1, served), 3)


# --- starting the peers --------------------------------------------------------------------------------


def png_100k() -> bytes:
    """A ~100 KB PNG of noise (incompressible, so the size is what was asked for)."""
    noise = random.Random(15).randbytes(184 * 184 * 3)
    buffer = io.BytesIO()
    Image.frombytes("RGB", (184, 184), noise).save(buffer, "PNG")
    return buffer.getvalue()


def proxy_bin() -> Path:
    """Where the proxy is installed: ``.venv-bench`` (``just bench`` puts it there), else beside Python."""
    own = HERE.parent / ".venv-bench" / "bin"
    return own if (own / "litellm").exists() else Path(sys.executable).parent


def litellm_missing() -> str | None:
    probe = subprocess.run(
        [str(proxy_bin() / "python"), "-c", "import fastapi, backoff, litellm.proxy.proxy_cli"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    if probe.returncode != 0:
        return (
            "the LiteLLM proxy is not installed (`just bench` installs the bench extra into .venv-bench): "
            + (probe.stderr.strip()[-200:])
        )
    if not (proxy_bin() / "litellm").exists():
        return f"no `litellm` command in {proxy_bin()}"
    return None


@contextmanager
def litellm_proxy(tmp: str, upstream: str) -> Iterator[Callable[[], tuple[str, int]]]:
    """Start the proxy (it takes a while to import: the caller does other set-up meanwhile) and yield a
    function that waits for it to be up and returns ``(base URL, pid)``."""
    port = free_port()
    config = Path(tmp) / "litellm.yaml"
    config.write_text(
        "model_list:\n"
        "  - model_name: gpt-4o\n"
        "    litellm_params:\n"
        "      model: openai/gpt-4o\n"
        f"      api_base: {upstream}/v1\n"
        f"      api_key: {KEY}\n"
    )
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY_DISABLED": "true",
        "LITELLM_LOG": "ERROR",
        "DISABLE_ADMIN_UI": "True",
        "NO_DOCS": "True",
        "LITELLM_MASTER_KEY": LITELLM_KEY,
    }
    command = [str(proxy_bin() / "litellm"), "--config", str(config)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]
    base = f"http://127.0.0.1:{port}"
    log = Path(tmp) / "litellm.log"
    with started(command, env, log) as process:

        def up() -> tuple[str, int]:
            wait_up(process, log, f"{base}/health/liveliness", LITELLM_STARTUP)
            return base, process.pid

        yield up


def openai_body(data_url: str, model: str = "gpt-4o") -> Callable[[], dict[str, Any]]:
    def body() -> dict[str, Any]:
        content = [
            {"type": "text", "text": PROMPT},
            {"type": "image_url", "image_url": {"url": data_url, "detail": "auto"}},
        ]
        return {"model": model, "messages": [{"role": "user", "content": content}], "stream": True}

    return body


def responses_body(data_url: str, model: str) -> Callable[[], dict[str, Any]]:
    """The same question as :func:`openai_body`, as a Responses API request (``store: false``: nothing
    kept, like the other stateless targets)."""

    def body() -> dict[str, Any]:
        content = [
            {"type": "input_text", "text": PROMPT},
            {"type": "input_image", "image_url": data_url, "detail": "auto"},
        ]
        return {
            "model": model,
            "input": [{"role": "user", "content": content}],
            "stream": True,
            "store": False,
        }

    return body


async def upload(client: httpx.AsyncClient, base: str, token: str, png: bytes, thread: str) -> Any:
    response = await client.post(
        f"{base}/api/files",
        files={"file": ("bench.png", png, "image/png")},
        data={"threadId": thread},
        headers={"Authorization": f"Bearer {token}"},
    )
    if response.status_code != 201:
        raise RuntimeError(f"upload answered {response.status_code}: {response.text[:300]}")
    return response.json()["parts"]


async def prepare_iris(
    base: str, admin: str, token: str, png: bytes, upstream: str, threads: int, with_model: bool = True
) -> tuple[list[tuple[str, Any]], Any]:
    """The openai model at the upstream (unless added already); ``threads`` fresh threads with an
    uploaded image each."""
    async with httpx.AsyncClient(timeout=TIMEOUT, limits=httpx.Limits(max_connections=4)) as client:
        model = {"name": "GPT", "provider": "openai", "modelId": "gpt-4o", "type": "vision"}
        if with_model:
            options = {"baseUrl": f"{upstream}/v1"}
            await asyncio.to_thread(add_model, base, admin, {**model, "options": options})
        ids = [str(uuid.uuid4()) for _ in range(threads)]
        semaphore = asyncio.Semaphore(4)

        async def one_upload(thread: str) -> Any:
            async with semaphore:
                return await upload(client, base, token, png, thread)

        parts = await asyncio.gather(*(one_upload(t) for t in ids))
    return [(t, p["agui"]) for t, p in zip(ids, parts, strict=True)], parts[0]["chat"]


def runs_body(threads: list[tuple[str, Any]]) -> Callable[[], dict[str, Any]]:
    supply = iter(threads)

    def body() -> dict[str, Any]:
        thread, part = next(supply)
        return {
            "threadId": thread,
            "runId": str(uuid.uuid4()),
            "protocolVersion": "1.0",
            "state": {},
            "messages": [
                {"id": str(uuid.uuid4()), "role": "user", "content": [{"type": "text", "text": PROMPT}, part]}
            ],
            "tools": [],
            "context": [],
            "forwardedProps": {"modelId": "openai/gpt-4o", "enableTools": False},
        }

    return body


def chat_body(part: Any) -> Callable[[], dict[str, Any]]:
    def body() -> dict[str, Any]:
        return {"modelId": "openai/gpt-4o", "parts": [{"type": "text", "text": PROMPT}, part]}

    return body


async def sql_per_request(target: Target, counts: Path, figures: Figures) -> None:
    """Statements and commits per request, from the launcher's counters around SQL_BATCH requests."""
    pid = target.pids[0]

    def read() -> tuple[int, int]:
        os.kill(pid, signal.SIGUSR1)
        time.sleep(0.2)
        statements, commits = counts.read_text().split()
        return int(statements), int(commits)

    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        await one(client, target)
        s0, c0 = read()
        for _ in range(SQL_BATCH):
            await one(client, target)
        s1, c1 = read()
    figures.sql[target.name] = {
        "statements_per_request": round((s1 - s0) / SQL_BATCH, 2),
        "commits_per_request": round((c1 - c0) / SQL_BATCH, 2),
    }


# --- the report ----------------------------------------------------------------------------------------


def _get(table: dict[str, dict[str, float]], name: str, key: str) -> float | None:
    value = table.get(name, {}).get(key)
    return None if value is None else float(value)


def _fmt(value: float | None, unit: str = "", digits: int = 1) -> str:
    if value is None or value != value:
        return "—"
    return f"{value:,.{digits}f}{unit}" if abs(value) < 1000 else f"{value:,.0f}{unit}"


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def targets_met(f: Figures) -> list[tuple[str, float | None, str, bool | None]]:
    """(figure, measured, target, met) for each of issue 26's targets that this bench measures: ratios to
    the LiteLLM proxy within this one run (absolute figures move with the machine's load)."""
    out: list[tuple[str, float | None, str, bool | None]] = []

    def check(what: str, value: float | None, target: str, ok: Callable[[float], bool]) -> None:
        out.append((what, value, target, None if value is None else ok(value)))

    def vs_litellm(table: dict[str, dict[str, float]], name: str, key: str) -> float | None:
        return _ratio(_get(table, name, key), _get(table, LITELLM, key))

    runs, chat = (RUNS, CHAT)
    check(
        "added first text, /agent/runs ÷ LiteLLM's",
        vs_litellm(f.sequential, runs, "added_first_text_ms"),
        "<= 0.25",
        lambda v: v <= 0.25,
    )
    check(
        "added first text, /api/llm/chat ÷ LiteLLM's",
        _ratio(
            _get(f.sequential, chat, "added_first_text_ms"),
            _get(f.sequential, LITELLM, "added_first_text_ms"),
        ),
        "<= 0.125",
        lambda v: v <= 0.125,
    )
    check(
        "c=16 /agent/runs req/s ÷ LiteLLM's", vs_litellm(f.loop, runs, "req_per_s"), ">= 8", lambda v: v >= 8
    )
    check(
        "c=16 first-byte p99 ÷ LiteLLM's",
        vs_litellm(f.loop, runs, "first_byte_p99_ms"),
        "<= 0.08",
        lambda v: v <= 0.08,
    )
    check(
        "server CPU per run ÷ LiteLLM's",
        vs_litellm(f.loop, runs, "cpu_per_request_ms"),
        "<= 0.125",
        lambda v: v <= 0.125,
    )
    check("peak RSS ÷ LiteLLM's", vs_litellm(f.loop, runs, "peak_rss_mib"), "<= 0.25", lambda v: v <= 0.25)
    for name in (RUNS, CHAT, GATEWAY, RESPONSES):
        for key in ("sequential_per_request", "loop_per_request"):
            check(
                f"upstream connections/request, {name}, {key.split('_')[0]}",
                _get(f.connections, name, key),
                "0",
                lambda v: v == 0,
            )
    check(
        "PostgreSQL: /agent/runs CPU per run ÷ SQLite's (c=16)",
        _ratio(
            _get(f.loop, f"{RUNS} postgresql x1 c=16", "cpu_per_request_ms"),
            _get(f.loop, RUNS, "cpu_per_request_ms"),
        ),
        "<= 1.3",
        lambda v: v <= 1.3,
    )
    check(
        "PostgreSQL: 2 processes ÷ 1 at c=32 (req/s)",
        _ratio(
            _get(f.loop, f"{RUNS} postgresql x2 c=32", "req_per_s"),
            _get(f.loop, f"{RUNS} postgresql x1 c=32", "req_per_s"),
        ),
        ">= 1.7",
        lambda v: v >= 1.7,
    )
    lost = sum(int(row.get("errors", 0)) for label, row in f.loop.items() if "postgresql" in label)
    if any("postgresql" in label for label in f.loop):
        check("PostgreSQL: failed runs in the loops", lost, "0", lambda v: v == 0)
    return out


def report(f: Figures) -> None:
    names = [n for n in TARGETS if n in f.sequential or n in f.loop]
    rows: list[tuple[str, list[str]]] = [  # label, one cell per target
        (
            "added first byte (paired median)",
            [_fmt(_get(f.sequential, n, "added_first_byte_ms"), " ms") for n in names],
        ),
        (
            "added first text (paired median)",
            [_fmt(_get(f.sequential, n, "added_first_text_ms"), " ms") for n in names],
        ),
        (
            "added total (paired median)",
            [_fmt(_get(f.sequential, n, "added_total_ms"), " ms") for n in names],
        ),
        ("sequential total p50", [_fmt(_get(f.sequential, n, "total_p50_ms"), " ms") for n in names]),
        ("c=16 req/s", [_fmt(_get(f.loop, n, "req_per_s")) for n in names]),
        ("c=16 first byte p50", [_fmt(_get(f.loop, n, "first_byte_p50_ms"), " ms") for n in names]),
        ("c=16 first byte p99", [_fmt(_get(f.loop, n, "first_byte_p99_ms"), " ms") for n in names]),
        ("c=16 first text p99", [_fmt(_get(f.loop, n, "first_text_p99_ms"), " ms") for n in names]),
        ("c=16 total p99", [_fmt(_get(f.loop, n, "total_p99_ms"), " ms") for n in names]),
        ("server CPU per request", [_fmt(_get(f.loop, n, "cpu_per_request_ms"), " ms") for n in names]),
        (
            "client CPU per request",
            [_fmt(_get(f.loop, n, "client_cpu_per_request_ms"), " ms") for n in names],
        ),
        ("peak RSS", [_fmt(_get(f.loop, n, "peak_rss_mib"), " MiB") for n in names]),
        (
            "upstream conns/request, sequential",
            [_fmt(_get(f.connections, n, "sequential_per_request"), digits=3) for n in names],
        ),
        (
            "upstream conns/request, c=16",
            [_fmt(_get(f.connections, n, "loop_per_request"), digits=3) for n in names],
        ),
        ("SQL statements/request", [_fmt(_get(f.sql, n, "statements_per_request")) for n in names]),
        ("SQL commits/request", [_fmt(_get(f.sql, n, "commits_per_request")) for n in names]),
    ]
    width = max(len(label) for label, _ in rows)
    cols = [max(len(n), 10) for n in names]
    print(f"{'figure':<{width}} | " + " | ".join(f"{n:>{c}}" for n, c in zip(names, cols, strict=True)))
    print("-" * width + "-+-" + "-+-".join("-" * c for c in cols))
    for label, values in rows:
        print(f"{label:<{width}} | " + " | ".join(f"{v:>{c}}" for v, c in zip(values, cols, strict=True)))
    print("\nthe client of each closed loop (separate processes, each with its own loop):")
    for label, line in f.clients.items():
        print(f"  {label}: {line}")
    print(
        "\n1-minute load average at start -> end of each phase"
        " (2 shared cores: other work shifts the figures):"
    )
    for phase, loads in f.load.items():
        print(f"  {phase}: {' -> '.join(str(v) for v in loads)}")
    for name, why in f.skipped.items():
        print(f"peer skipped: {name}: {why}")
    for phase, errors in f.errors.items():
        print(f"errors in {phase}: {errors}")


def main() -> int:
    figures = Figures()
    png = png_100k()
    data_url = "data:image/png;base64," + base64.b64encode(png).decode()
    loop_threads = CLIENTS * LOOP_WARM + LOOP_MAX
    c32 = (32 * LOOP_WARM + LOOP_MAX) if POSTGRESQL else 0
    with tempfile.TemporaryDirectory(prefix="iris-peers-") as tmp, ExitStack() as stack:
        port = free_port()
        upstream = f"http://127.0.0.1:{port}"
        stack.enter_context(
            running(
                [sys.executable, __file__, "--upstream-server", str(port)],
                dict(os.environ),
                Path(tmp) / "upstream.log",
                f"{upstream}/healthz",
            )
        )
        targets = [
            Target(
                DIRECT,
                f"{upstream}/v1/chat/completions",
                {"Authorization": f"Bearer {KEY}"},
                openai_body(data_url),
                agui=False,
            )
        ]
        missing = litellm_missing()
        lite_up = None if missing else stack.enter_context(litellm_proxy(tmp, upstream))
        counts = Path(tmp) / "sql-counts"
        base, token, pid = stack.enter_context(
            iris(
                tmp,
                environ={"OPENAI_API_KEY": KEY, "BENCH_SQL_COUNTS": str(counts)},
                command=[str(HERE / "_sqlcount.py")],
            )
        )
        admin = dev_token({**os.environ, "IRIS_DATA_DIR": f"{tmp}/data"}, "root", "admin")
        threads, chat_part = asyncio.run(
            prepare_iris(
                base, admin, token, png, upstream, WARM_ROUNDS + ROUNDS + loop_threads + SQL_BATCH + 1 + c32
            )
        )
        if lite_up is not None:
            try:
                lite_base, lite_pid = lite_up()
            except RuntimeError as exc:
                missing = f"the LiteLLM proxy did not start: {str(exc)[-300:]}"
            else:
                lite_headers = {"Authorization": f"Bearer {LITELLM_KEY}"}
                lite_url = f"{lite_base}/v1/chat/completions"
                lite = Target(
                    LITELLM, lite_url, lite_headers, openai_body(data_url), agui=False, pids=[lite_pid]
                )
                targets.append(lite)
        if missing:
            figures.skipped[LITELLM] = missing
            print(f"peer skipped: LiteLLM proxy: {missing}", flush=True)
        auth = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
        c32_threads, threads = threads[:c32], threads[c32:]
        seq_threads, loop_supply, sql_threads = (
            threads[: WARM_ROUNDS + ROUNDS],
            threads[WARM_ROUNDS + ROUNDS : WARM_ROUNDS + ROUNDS + loop_threads],
            threads[WARM_ROUNDS + ROUNDS + loop_threads :],
        )
        runs = Target(RUNS, f"{base}/agent/runs", auth, runs_body(seq_threads), agui=True, pids=[pid])
        chat = Target(CHAT, f"{base}/api/llm/chat", auth, chat_body(chat_part), agui=True, pids=[pid])
        gateway_body = openai_body(data_url, "openai/gpt-4o")
        gateway = Target(GATEWAY, f"{base}/v1/chat/completions", auth, gateway_body, agui=False, pids=[pid])
        answers = responses_body(data_url, "openai/gpt-4o")
        responses = Target(RESPONSES, f"{base}/v1/responses", auth, answers, agui=False, pids=[pid])
        targets += [runs, chat, gateway, responses]
        if peer := [t for t in targets if t.name == LITELLM]:
            asyncio.run(sequential([targets[0], *peer], upstream, figures, phase="litellm"))
        asyncio.run(sequential([targets[0], runs, chat, gateway, responses], upstream, figures, phase="iris"))
        runs.body = runs_body(loop_supply)
        for target in targets:
            closed_loop(target, upstream, figures)
        runs.body = runs_body(sql_threads)
        for target in (runs, chat, gateway, responses):
            asyncio.run(sql_per_request(target, counts, figures))
        for target in targets:
            if target.pids and target.name in figures.loop:
                figures.loop[target.name]["peak_rss_mib"] = round(sum(map(peak_rss_mib, target.pids)), 1)
        if POSTGRESQL:
            runs.body = runs_body(c32_threads)
            postgresql_loops(tmp, png, upstream, runs, figures)
    report(figures)
    results = Results("peers")
    for what, value, goal, met in targets_met(figures):
        results.figure(what, value, "x" if "÷" in what else "", target=goal, met=met)
    for name, table in asdict(figures).items():
        results.detail(name, table)
    print()
    results.print_targets()
    results.write()
    return 1 if any(k.startswith("loop") for k in figures.errors) else 0


def postgresql_loops(tmp: str, png: bytes, upstream: str, sqlite_c32: Target, figures: Figures) -> None:
    """``/agent/runs`` at c=16 and c=32 on one and two Iris processes sharing a throwaway PostgreSQL
    cluster (one port, ``_reuseport.py``), and SQLite's c=32 beside them; skipped, saying why, without
    ``initdb``."""
    sys.path.insert(0, str(HERE.parent))
    from tests.support.postgres import TemporaryCluster

    closed_loop(sqlite_c32, upstream, figures, clients=32, label=f"{RUNS} c=32")
    reason = TemporaryCluster.unavailable_reason()
    if reason:
        figures.skipped["postgresql"] = reason
        return
    cluster = TemporaryCluster()
    try:
        url = cluster.start()
        for processes in (1, 2):
            environ = {"OPENAI_API_KEY": KEY, "IRIS_DATABASE_URL": fresh_database(url, f"x{processes}")}
            with iris_processes(f"{tmp}/pg-x{processes}", processes, environ) as (base, token, admin, pids):
                for clients in (CLIENTS, 32):
                    threads, _ = asyncio.run(
                        prepare_iris(
                            base,
                            admin,
                            token,
                            png,
                            upstream,
                            clients * LOOP_WARM + LOOP_MAX,
                            clients == CLIENTS,
                        )
                    )
                    auth = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
                    target = Target(
                        RUNS, f"{base}/agent/runs", auth, runs_body(threads), agui=True, pids=pids
                    )
                    label = f"{RUNS} postgresql x{processes} c={clients}"
                    closed_loop(target, upstream, figures, clients=clients, label=label)
    finally:
        cluster.stop()


def configure(argv: Sequence[str]) -> None:
    """Counts and concurrency from the command line (develop with small ones; `just bench` runs the
    defaults)."""
    global ROUNDS, LOOP_SECONDS, LOOP_MAX, CLIENT_PROCESSES, POSTGRESQL
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="measured sequential rounds")
    parser.add_argument("--loop-seconds", type=float, default=LOOP_SECONDS, help="each closed loop")
    parser.add_argument("--loop-max", type=int, default=LOOP_MAX, help="requests per closed loop at most")
    parser.add_argument("--client-processes", type=int, default=CLIENT_PROCESSES, help="load processes")
    parser.add_argument("--no-postgresql", action="store_true", help="skip the PostgreSQL loops")
    args = parser.parse_args(argv)
    ROUNDS, LOOP_SECONDS, LOOP_MAX = args.rounds, args.loop_seconds, args.loop_max
    CLIENT_PROCESSES, POSTGRESQL = args.client_processes, not args.no_postgresql


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--upstream-server":
        serve_upstream(int(sys.argv[2]))
        sys.exit(0)
    configure(sys.argv[1:])
    sys.exit(main())
