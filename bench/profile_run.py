"""Where one run's milliseconds go on the server, on SQLite and on PostgreSQL (issue 26).

A real Iris (``python bench/profile_run.py --serve``: ``python -m iris serve`` with timers wrapped around
the functions of each phase; nothing in the app changes) runs ``RUNS`` sequential ``/agent/runs`` of
an ``openai`` model against a fake upstream of its own process (50 content chunks, no delay). Each
phase is the CPU time of the loop's thread inside its functions per run (``time.thread_time``: what
the server spends, not what it waits for, so a busy machine changes it little; SQLite runs inline on
the loop, so its work is counted; PostgreSQL's round trips are not, their driver work is):

- intake: ``prepare_run`` (every check and query before the run starts) and the intake's commit;
- vendor request build: the provider's ``build_request``;
- vendor stream parse: ``json.loads`` of each SSE ``data:`` and the chunk decoder;
- AG-UI encode: ``encode_event``;
- SSE write: framing plus the time the response spends sending each piece (between the relay's
  ``yield`` and its resumption);
- event batches and the closing transaction: ``EventStore._append`` and ``EventStore._record``;
- server CPU per run (all threads, from ``/proc``) and what the phases leave unaccounted.

Statements and commits are counted per phase too (``bench/_sqlcount.py``'s counters;
``--statements`` lists one run's). ``--before REF [--passes N]`` alternates this tree's server with
commit REF's (its packages from ``git archive``), so a change's before and after see the same load.
PostgreSQL is skipped, with the reason, when ``initdb`` is missing. Usage: ``python bench/profile_run.py
[--runs N] [--engine sqlite|postgresql|both] [--statements] [--before REF] [--startup]``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import signal
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncGenerator, Callable, Iterator
from pathlib import Path
from types import FrameType, SimpleNamespace
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
if "--source" in sys.argv:  # ``--before REF``'s server: that commit's packages, before anything imports app
    sys.path.insert(0, sys.argv[sys.argv.index("--source") + 1])

from _iris import (
    ROOT,
    add_model,
    checkout,
    cpu_seconds,
    dev_token,
    free_port,
    fresh_database,
    iris,
    iris_env,
    load,
    running,
)
from _results import Results

RUNS = 60
WARMUP = 5
CHUNKS = 50
KEY = "sk-profile"
PHASES = (
    ("intake checks (prepare_run)", "prepare_run"),
    ("intake commit", "intake_commit"),
    ("vendor request build", "build_request"),
    ("vendor stream parse", "parse"),
    ("AG-UI encode", "encode"),
    ("SSE write", "sse_write"),
    ("event batches", "append"),
    ("closing transaction", "record"),
)
RESULTS = Results("profile_run")

# --- the server side (``--serve``): timers around each phase's functions -----------------------------

_totals: dict[str, float] = defaultdict(float)
_phase: list[str] = []
"""The phases the loop is inside now (innermost last): a statement is counted for the innermost."""
_statements: list[str] = []
"""Every statement's phase and SQL since the last snapshot (``--statements`` prints one run's)."""


def _sync(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            _totals[name] += time.thread_time() - started

    return timed


def _async(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        _phase.append(name)
        try:
            return await function(*args, **kwargs)
        finally:
            _phase.remove(name)
            _totals[name] += time.thread_time() - started

    return timed


def _relay(function: Callable[..., AsyncGenerator[bytes, None]]) -> Callable[..., Any]:
    @functools.wraps(function)
    async def timed(*args: Any, **kwargs: Any) -> AsyncGenerator[bytes, None]:
        async for chunk in function(*args, **kwargs):
            started = time.thread_time()
            yield chunk  # resumed when the response has sent it and asks for the next piece
            _totals["sse_write"] += time.thread_time() - started

    return timed


def _instrument() -> None:
    import iris.app.agui.sse as sse
    import iris.app.api.routes.runs as routes
    import iris.app.runs.engine.streaming as streaming
    import iris.app.runs.store.event_store as event_store
    import iris.providers.openai.provider as openai
    import iris.providers.openai.stream as openai_stream

    def wrap(owner: object, attribute: str, timer: Callable[..., Any]) -> None:
        setattr(owner, attribute, timer(getattr(owner, attribute)))

    wrap(routes, "prepare_run", functools.partial(_async, "prepare_run"))
    wrap(streaming, "_commit", functools.partial(_async, "intake_commit"))
    wrap(openai.OpenAIProvider, "build_request", functools.partial(_sync, "build_request"))
    setattr(openai, "json", SimpleNamespace(loads=_sync("parse", json.loads)))  # noqa: B010 (mypy: not exported)
    wrap(openai_stream.ChunkDecoder, "feed", functools.partial(_sync, "parse"))
    wrap(openai_stream.ChunkDecoder, "finish", functools.partial(_sync, "parse"))
    wrap(event_store, "encode_event", functools.partial(_sync, "encode"))
    wrap(sse, "frame", functools.partial(_sync, "sse_write"))
    wrap(streaming, "relay", _relay)
    wrap(event_store.EventStore, "_append", functools.partial(_async, "append"))
    wrap(event_store.EventStore, "_record", functools.partial(_async, "record"))


def _count_statements() -> None:
    """Count every cursor execution (an ``executemany`` is one) under the phase it ran in."""
    from _sqlcount import count_sql

    def statement(sql: str) -> None:
        # Sequential runs only: with one run at a time, the phase stack is that run's.
        phase = _phase[-1] if _phase else "other"
        _totals[f"statements:{phase}"] += 1
        _statements.append(f"{phase}: {' '.join(sql.split())[:160]}")

    def commit() -> None:
        _totals["commits"] += 1

    count_sql(statement, commit)


def _dump(_signum: int, _frame: FrameType | None) -> None:
    Path(os.environ["BENCH_PROFILE_OUT"]).write_text(json.dumps({**_totals, "sql": _statements}))
    _statements.clear()


def serve() -> None:
    from iris.app.__main__ import main

    _instrument()
    _count_statements()
    signal.signal(signal.SIGUSR1, _dump)
    main(["serve"])


# --- the fake upstream (``--upstream PORT``) ------------------------------------------------------------


def _frames() -> Iterator[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
        choices = [] if usage else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        payload = {"id": "chatcmpl-p", "object": "chat.completion.chunk", "created": 1_760_000_000}
        payload |= {"model": "gpt-4o-2024-08-06", "choices": choices, "usage": usage}
        return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"

    yield chunk({"role": "assistant", "content": ""})
    for i in range(CHUNKS):
        yield chunk({"content": f"word{i} "})
    yield chunk({}, "stop")
    yield chunk({}, usage={"prompt_tokens": 30, "completion_tokens": CHUNKS, "total_tokens": 30 + CHUNKS})
    yield b"data: [DONE]\n\n"


async def _upstream(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body", False):
        pass
    if scope["path"] == "/healthz":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})
        return
    headers = [(b"content-type", b"text/event-stream; charset=utf-8")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    for frame in _frames():
        await send({"type": "http.response.body", "body": frame, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def serve_upstream(port: int) -> None:
    import uvicorn

    uvicorn.run(_upstream, host="127.0.0.1", port=port, log_level="warning", timeout_keep_alive=300)


# --- the driver -------------------------------------------------------------------------------------------


def body() -> dict[str, Any]:
    return {
        "threadId": str(uuid.uuid4()),
        "runId": str(uuid.uuid4()),
        "protocolVersion": "1.0",
        "state": {},
        "messages": [{"id": str(uuid.uuid4()), "role": "user", "content": "Say fifty words."}],
        "tools": [],
        "context": [],
        "forwardedProps": {"modelId": "openai/gpt-4o"},
    }


async def drive(base: str, token: str, count: int) -> int:
    """``count`` sequential runs; returns how many ended with ``RUN_FINISHED``."""
    finished = 0
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    async with httpx.AsyncClient(timeout=60) as client:
        for _ in range(count):
            async with client.stream("POST", f"{base}/agent/runs", json=body(), headers=headers) as answer:
                text = (await answer.aread()).decode()
            finished += '"RUN_FINISHED"' in text
    return finished


def snapshot(pid: int, out: Path) -> dict[str, Any]:
    out.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR1)
    for _ in range(200):
        if out.exists() and out.stat().st_size:
            return dict(json.loads(out.read_text()))
        time.sleep(0.02)
    raise RuntimeError("the profiled server wrote no figures")


STATEMENT_PHASES = ("prepare_run", "intake_commit", "append", "record", "other")


def profile(
    engine: str, runs: int, tmp: str, environ: dict[str, str], source: str | None = None
) -> dict[str, Any]:
    out = Path(tmp) / "phases.json"
    upstream_port = free_port()
    upstream = f"http://127.0.0.1:{upstream_port}"
    up_cmd = [sys.executable, __file__, "--upstream", str(upstream_port)]
    env = {**environ, "OPENAI_API_KEY": KEY, "BENCH_PROFILE_OUT": str(out)}
    with (
        running(up_cmd, dict(os.environ), Path(tmp) / "upstream.log", f"{upstream}/healthz"),
        iris(
            tmp,
            env,
            command=[__file__, "--serve", *(("--source", source) if source else ())],
            root=Path(source) if source else ROOT,
        ) as (base, token, pid),
    ):
        admin = dev_token({**os.environ, **environ, "IRIS_DATA_DIR": f"{tmp}/data"}, "root", "admin")
        model = {"name": "GPT", "provider": "openai", "modelId": "gpt-4o", "type": "text"}
        add_model(base, admin, {**model, "options": {"baseUrl": f"{upstream}/v1"}})
        if asyncio.run(drive(base, token, WARMUP)) != WARMUP:
            raise RuntimeError(f"{engine}: warm-up runs did not finish; see {tmp}/iris.log")
        before, cpu_before, load_before = snapshot(pid, out), cpu_seconds(pid), load()
        started = time.perf_counter()
        finished = asyncio.run(drive(base, token, runs))
        wall = time.perf_counter() - started
        after, cpu_after = snapshot(pid, out), cpu_seconds(pid)
        asyncio.run(drive(base, token, 1))  # one more run, alone, whose statements are listed
        one_run = snapshot(pid, out)["sql"]
    if finished != runs:
        raise RuntimeError(f"{engine}: {runs - finished} of {runs} runs did not finish")
    figures: dict[str, Any] = {
        key: (after.get(key, 0) - before.get(key, 0)) * 1000 / runs for _, key in PHASES
    }
    for phase in (*STATEMENT_PHASES, "commits"):
        key = phase if phase == "commits" else f"statements:{phase}"
        figures[key] = (after.get(key, 0) - before.get(key, 0)) / runs
    figures["cpu"] = (cpu_after - cpu_before) * 1000 / runs
    figures["wall"] = wall * 1000 / runs
    figures["load"] = max(load_before, load())
    figures["sql"] = one_run
    return figures


def rss_mib(pid: int) -> float:
    """Resident memory of the process, MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def startup(tmp: str) -> dict[str, float]:
    """A fresh ``python -m iris serve`` on the default catalogue: seconds until ``/healthz`` answers, its
    RSS then and after one run and after ``GET /api/providers`` (which loads every provider)."""
    out = Path(tmp) / "phases.json"
    upstream_port = free_port()
    upstream = f"http://127.0.0.1:{upstream_port}"
    up_cmd = [sys.executable, __file__, "--upstream", str(upstream_port)]
    env = {"OPENAI_API_KEY": KEY, "BENCH_PROFILE_OUT": str(out)}
    port = free_port()
    iris_environ = iris_env(f"{tmp}/data", port, env)
    token = dev_token(iris_environ)
    base = f"http://127.0.0.1:{port}"
    serve_cmd = [sys.executable, "-m", "iris", "serve"]
    with running(up_cmd, dict(os.environ), Path(tmp) / "upstream.log", f"{upstream}/healthz"):
        launched = time.perf_counter()
        with running(serve_cmd, iris_environ, Path(tmp) / "iris.log", f"{base}/healthz") as pid:
            figures = {"startup_s": time.perf_counter() - launched, "rss_started": rss_mib(pid)}
            admin = dev_token({**os.environ, "IRIS_DATA_DIR": f"{tmp}/data"}, "root", "admin")
            model = {"name": "GPT", "provider": "openai", "modelId": "gpt-4o", "type": "text"}
            add_model(base, admin, {**model, "options": {"baseUrl": f"{upstream}/v1"}})
            if asyncio.run(drive(base, token, 1)) != 1:
                raise RuntimeError(f"the run did not finish; see {tmp}/iris.log")
            figures["rss_after_run"] = rss_mib(pid)
            listed = httpx.get(
                f"{base}/api/providers", headers={"Authorization": f"Bearer {token}"}, timeout=120
            )
            listed.raise_for_status()
            figures["rss_all_providers"] = rss_mib(pid)
    figures["load"] = load()
    return figures


def table(results: dict[str, dict[str, Any]]) -> list[str]:
    engines = list(results)
    lines = ["| ms per run | " + " | ".join(engines) + " |", "|---|" + "---:|" * len(engines)]

    def row(label: str, key: str, digits: int = 2) -> None:
        lines.append(f"| {label} | " + " | ".join(f"{results[e][key]:.{digits}f}" for e in engines) + " |")

    for label, key in PHASES:
        row(label, key)
    row("server CPU per run (all threads)", "cpu")
    row("client-seen wall per run", "wall")
    for phase in STATEMENT_PHASES:
        row(f"statements per run: {phase}", f"statements:{phase}", 1)
    row("commits per run", "commits", 1)
    row("1-minute load average", "load")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--engine", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--startup", action="store_true", help="measure start-up time and RSS instead")
    parser.add_argument("--statements", action="store_true", help="also list one run's SQL statements")
    parser.add_argument("--before", metavar="REF", help="alternate with commit REF's server, side by side")
    parser.add_argument("--passes", type=int, default=1, help="with --before: rounds of (this, REF)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    parser.add_argument("--upstream", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return 0
    if args.upstream:
        serve_upstream(args.upstream)
        return 0
    if args.startup:
        for attempt in range(3):
            with tempfile.TemporaryDirectory() as tmp:
                figures = startup(tmp)
            print(
                f"start-up {attempt + 1}: {figures['startup_s']:.1f} s to /healthz,"
                f" RSS {figures['rss_started']:.0f} MiB started,"
                f" {figures['rss_after_run']:.0f} MiB after an openai run,"
                f" {figures['rss_all_providers']:.0f} MiB after GET /api/providers;"
                f" load {figures['load']:.2f}"
            )
            for key in ("startup_s", "rss_started", "rss_after_run", "rss_all_providers"):
                RESULTS.figure(f"{key}_{attempt + 1}", figures[key], "s" if key == "startup_s" else "MiB")
        RESULTS.write()
        return 0
    results: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    with tempfile.TemporaryDirectory() as sources:
        before = str(checkout(args.before, Path(sources) / "before")) if args.before else None
        rounds: list[tuple[str, str | None]] = [("", None)]
        if before:  # alternated, so both see the same load
            rounds = [
                (suffix, source)
                for n in range(args.passes)
                for suffix, source in ((f" {n + 1}", None), (f"@{args.before} {n + 1}", before))
            ]
        if args.engine in ("sqlite", "both"):
            for suffix, source in rounds:
                with tempfile.TemporaryDirectory() as tmp:
                    results[f"SQLite{suffix}"] = profile("sqlite", args.runs, tmp, {}, source)
        if args.engine in ("postgresql", "both"):
            from tests.support.postgres import TemporaryCluster

            reason = TemporaryCluster.unavailable_reason()
            if reason:
                skipped.append(f"PostgreSQL skipped: {reason}")
            else:
                cluster = TemporaryCluster()
                url = cluster.start()
                try:
                    for n, (suffix, source) in enumerate(rounds):
                        db = fresh_database(url, f"profile_{n}")
                        with tempfile.TemporaryDirectory() as tmp:
                            results[f"PostgreSQL{suffix}"] = profile(
                                "postgresql", args.runs, tmp, {"IRIS_DATABASE_URL": db}, source
                            )
                finally:
                    cluster.stop()
    print(f"{args.runs} sequential runs per engine after {WARMUP} warm-up, {CHUNKS} chunks each:")
    print("\n".join(table(results) + skipped))
    for engine, measured in results.items():
        if args.statements:
            print(f"\n{engine}: the statements of one run (phase: SQL)")
            print("\n".join(f"  {line}" for line in measured["sql"]))
        for _, key in PHASES:
            RESULTS.figure(f"{engine.lower()}_{key}_ms", measured[key], "ms")
        for phase in STATEMENT_PHASES:
            RESULTS.figure(f"{engine.lower()}_statements_{phase}", measured[f"statements:{phase}"], "per run")
        RESULTS.figure(f"{engine.lower()}_commits", measured["commits"], "per run")
        RESULTS.figure(f"{engine.lower()}_cpu_per_run_ms", measured["cpu"], "ms")
        RESULTS.figure(f"{engine.lower()}_load_average", measured["load"], "1-minute")
    RESULTS.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
