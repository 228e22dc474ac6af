"""What traces and metrics cost a run: `POST /agent/runs` on three real servers that differ only in
telemetry, measured side by side.

- ``off``: ``IRIS_METRICS=false`` and no ``OTEL_*`` variables (tracing off);
- ``metrics``: the defaults, metrics on and tracing off;
- ``sampled``: metrics on, and traces exported over OTLP/HTTP to a collector on loopback (defined here,
  its own process) with ``OTEL_TRACES_SAMPLER=parentbased_traceidratio`` at 10 %, the set-up the
  targets are for;
- ``all``: the same with every run traced (``always_on``), for the record.

``--before REF`` adds ``sampled@REF`` and ``all@REF``: the same set-ups served by the code of an
earlier commit (its ``app``, ``providers``, ``tools`` and migrations, from ``git archive``), in the
same rotation, so a change's before and after are measured side by side under the same load.

Each round sends one run (the offline ``local/vision`` model, a short text prompt, no image) to each
server in turn, in a rotating order; after warm-up, 300 rounds. That is one pass; ``--passes`` (5)
repeats it on fresh server processes, and the figures are the medians of the passes: where a process
lands (its core, its neighbours) moves its CPU per run by a few per cent, about the size of the
target, so one pass cannot tell 4 % from 6 %. Per server: the client-side time of a
whole run (request to last byte), p50, and its CPU per run (the server process and its threads,
/proc). Figures: the paired median of the time each telemetry set-up adds to a run over ``off``
(target ≤ 0.3 ms for ``sampled``), and the CPU it adds per run, as a share of ``off``'s (target
≤ 5 %). The 1-minute load average is printed beside them: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
from _iris import ROOT, checkout, cpu_seconds, free_port, iris, load, running
from _results import Results

WARMUP = 30
ROUNDS = 300
ADDED_MS_TARGET = 0.3
ADDED_CPU_TARGET = 0.05
RESULTS = Results("telemetry")
SETUPS: dict[str, Callable[[str], dict[str, str]]] = {
    "off": lambda _collector: {"IRIS_METRICS": "false"},
    "metrics": lambda _collector: {},
    "sampled": lambda collector: {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector,
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": "0.1",
    },
    "all": lambda collector: {"OTEL_EXPORTER_OTLP_ENDPOINT": collector, "OTEL_TRACES_SAMPLER": "always_on"},
}


def serve_collector(port: int) -> None:
    """A collector that takes every export and answers 200 (``--collector PORT``)."""
    import uvicorn

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/x-protobuf")],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def served_from(source: Path) -> tuple[str, ...]:
    """``python -m iris serve`` with the packages of ``source`` first on the path."""
    code = (
        f"import runpy, sys; sys.path.insert(0, {str(source)!r}); sys.argv = ['iris', 'serve']; "
        "runpy.run_module('iris', run_name='__main__', alter_sys=True)"
    )
    return ("-c", code)


@contextmanager
def collector(tmp: str) -> Iterator[str]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [sys.executable, __file__, "--collector", str(port)]
    with running(argv, dict(os.environ), Path(tmp) / "collector.log", f"{base}/health"):
        yield base


def body() -> dict[str, Any]:
    return {
        "threadId": str(uuid.uuid4()),
        "runId": str(uuid.uuid4()),
        "messages": [
            {"id": str(uuid.uuid4()), "role": "user", "content": "Describe a calm harbour at dusk."}
        ],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {"modelId": "local/vision"},
    }


async def one_run(client: httpx.AsyncClient, base: str, token: str) -> float:
    """One whole run, request to last byte, in seconds."""
    started = time.perf_counter()
    async with client.stream(
        "POST", f"{base}/agent/runs", json=body(), headers={"Authorization": f"Bearer {token}"}
    ) as response:
        async for _ in response.aiter_bytes():
            pass
        if response.status_code != 200:
            raise RuntimeError(f"{base}: {response.status_code}")
    return time.perf_counter() - started


async def measure(servers: dict[str, tuple[str, str, int]]) -> dict[str, dict[str, Any]]:
    names = list(servers)
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, float] = {}
    async with httpx.AsyncClient(timeout=60) as client:
        for index in range(WARMUP + ROUNDS):
            if index == WARMUP:
                cpu = {name: cpu_seconds(servers[name][2]) for name in names}
            order = names[index % len(names) :] + names[: index % len(names)]
            for name in order:
                base, token, _ = servers[name]
                elapsed = await one_run(client, base, token)
                if index >= WARMUP:
                    times[name].append(elapsed)
    cpu = {name: cpu_seconds(servers[name][2]) - cpu[name] for name in names}
    return {
        name: {
            "times": times[name],
            "p50_ms": statistics.median(times[name]) * 1000,
            "cpu_ms": cpu[name] * 1000 / ROUNDS,
        }
        for name in names
    }


def one_pass(
    setups: list[tuple[str, Callable[[str], dict[str, str]], tuple[str, ...] | None]],
    endpoint: str,
    into: str,
) -> dict[str, dict[str, float]]:
    """Fresh servers for every set-up, measured side by side: per set-up its run p50 and CPU per run,
    and (beside ``off``) the paired-median time and the CPU share it adds."""
    with ExitStack() as stack:
        servers = {}
        for index, (name, variables, command) in enumerate(setups):
            os.makedirs(f"{into}/{index}", exist_ok=True)
            servers[name] = stack.enter_context(iris(f"{into}/{index}", variables(endpoint), command=command))
        measured = asyncio.run(measure(servers))
    off = measured["off"]
    out: dict[str, dict[str, float]] = {}
    for name, row in measured.items():
        added = statistics.median(t - o for t, o in zip(row["times"], off["times"], strict=True)) * 1000
        added_cpu = (row["cpu_ms"] - off["cpu_ms"]) / off["cpu_ms"]
        out[name] = {"p50_ms": row["p50_ms"], "cpu_ms": row["cpu_ms"], "added": added, "added_cpu": added_cpu}
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--collector", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--before", metavar="REF", help="also serve sampled and all from commit REF")
    parser.add_argument(
        "--passes",
        type=int,
        default=5,
        help="passes, each on fresh server processes (default 5); the figures are their medians",
    )
    args = parser.parse_args()
    if args.collector:
        serve_collector(args.collector)
        return 0
    passes: list[dict[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(dir=ROOT / "bench") as tmp, ExitStack() as stack:
        endpoint = stack.enter_context(collector(tmp))
        setups: list[tuple[str, Callable[[str], dict[str, str]], tuple[str, ...] | None]] = [
            (name, variables, None) for name, variables in SETUPS.items()
        ]
        if args.before:
            source = served_from(checkout(args.before, Path(tmp) / "before"))
            setups += [(f"{name}@{args.before}", SETUPS[name], source) for name in ("sampled", "all")]
        load_before = load()
        for number in range(args.passes):
            passes.append(one_pass(setups, endpoint, f"{tmp}/pass{number}"))
        load_after = load()
    print(
        f"{args.passes} passes on fresh servers, {ROUNDS} runs per set-up each after {WARMUP} warm-up;"
        f" load average {load_before} -> {load_after}"
    )
    print("(a server process's placement moves its CPU figure by a few %: the median of the passes counts)")
    print(
        f"{'set-up':<18}{'run p50':>12}{'CPU per run':>14}{'added (paired p50)':>22}{'added CPU':>12}"
        "   passes"
    )
    for name in passes[0]:
        row = {key: statistics.median(one[name][key] for one in passes) for key in passes[0][name]}
        each = ", ".join(
            f"{one[name]['added']:+.2f} ms {one[name]['added_cpu'] * 100:+.1f} %" for one in passes
        )
        print(
            f"{name:<18}{row['p50_ms']:>10.2f} ms{row['cpu_ms']:>11.2f} ms"
            + ("" if name == "off" else f"{row['added']:>19.3f} ms{row['added_cpu'] * 100:>10.1f} %   {each}")
        )
        RESULTS.figure(f"{name}.run_p50", round(row["p50_ms"], 3), "ms")
        RESULTS.figure(f"{name}.cpu_per_run", round(row["cpu_ms"], 3), "ms")
        if name == "off":
            continue
        targeted = name.startswith("sampled")
        RESULTS.figure(
            f"{name}.added_time",
            round(row["added"], 3),
            "ms",
            target=f"<= {ADDED_MS_TARGET}" if targeted else None,
            met=row["added"] <= ADDED_MS_TARGET if targeted else None,
        )
        RESULTS.figure(
            f"{name}.added_cpu",
            round(row["added_cpu"] * 100, 2),
            "%",
            target=f"<= {ADDED_CPU_TARGET * 100:g}" if targeted else None,
            met=row["added_cpu"] <= ADDED_CPU_TARGET if targeted else None,
        )
    RESULTS.figure("passes", args.passes, "")
    RESULTS.figure("load_average", load_after, "1-min")
    RESULTS.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
