"""Instructions a request costs the server, counted by callgrind: figures that do not drift with the
machine (issue 26).

Timings on the 2 shared cores this project is measured on move by a factor of 2 from one day to the
next, and a 5 % change is inside the noise of any timed comparison. Valgrind's callgrind counts the
instructions a process executes in user space (what the kernel does for its syscalls is not counted),
and the count for the same code and the same requests repeats to about 1 %, whatever else the machine
is doing.

An Iris (``python -m iris serve``, this tree's or, with ``--before REF``, commit REF's packages) runs
under callgrind with counting off; after a warm-up, counting is switched on (``callgrind_control``)
around ``--runs`` sequential requests, then dumped. The requests are ``bench/peers.py``'s (an ``openai``
model on a fake upstream of its own process, a ~100 KB PNG uploaded to a fresh thread per run): ``POST
/agent/runs`` and ``POST /api/llm/chat``, each against an upstream streaming 10 and 50 chunks, so the
count splits into what a request costs once and what each chunk of the answer adds. Skipped, saying
why, without valgrind. Usage: ``python bench/instructions.py [--runs N] [--before REF]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
if "--upstream" in sys.argv:  # this script's own fake upstream: peers.py's, with CHUNKS chunks
    import peers

    peers.CHUNKS = int(sys.argv[sys.argv.index("--chunks") + 1])
    peers.serve_upstream(int(sys.argv[sys.argv.index("--upstream") + 1]))
    sys.exit(0)

import peers
from _iris import ROOT, checkout, dev_token, free_port, iris_env, load, running, wait_up
from _results import Results

CHUNK_COUNTS = (10, 50)
TARGETS = {"runs": "/agent/runs", "chat": "/api/llm/chat"}
WARMUP = 10
STARTUP_SECONDS = 900.0  # imports under valgrind are slow (tens of seconds on an idle machine)


def missing() -> str | None:
    """Why this bench cannot run here, or ``None``."""
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: apt-get install valgrind)"
    return None


async def _drive(url: str, headers: dict[str, str], bodies: Sequence[dict[str, object]]) -> None:
    async with httpx.AsyncClient(timeout=STARTUP_SECONDS) as client:
        for body in bodies:
            async with client.stream("POST", url, json=body, headers=headers) as response:
                if response.status_code != 200:
                    raise RuntimeError(
                        f"{url} answered {response.status_code}: {(await response.aread())[:300]!r}"
                    )
                async for _ in response.aiter_bytes():
                    pass


def _total(dump: Path) -> int:
    """The instructions a callgrind dump counted (its ``totals:`` line; ``summary:`` says 0 in a dump
    requested while counting was on)."""
    counts = [
        int(line.split()[1])
        for line in dump.read_text(errors="replace").splitlines()
        if line.startswith(("summary:", "totals:"))
    ]
    if not counts:
        raise RuntimeError(f"no totals in {dump}")
    return max(counts)


def count(tree: Path, target: str, chunks: int, runs: int, tmp: Path, png: bytes) -> float:
    """Instructions per request of ``target`` on the server of ``tree``, against ``chunks`` chunks."""
    up_port = free_port()
    upstream = f"http://127.0.0.1:{up_port}"
    up_cmd = [sys.executable, __file__, "--upstream", str(up_port), "--chunks", str(chunks)]
    work = Path(tempfile.mkdtemp(dir=tmp))
    with running(up_cmd, dict(os.environ), work / "upstream.log", f"{upstream}/healthz"):
        port = free_port()
        # PYTHONMALLOC=malloc: valgrind follows the allocator that way; both sides of a comparison pay it.
        env = iris_env(
            str(work / "data"), port, {"OPENAI_API_KEY": peers.KEY, "PYTHONMALLOC": "malloc"}, root=tree
        )
        token, admin = dev_token(env), dev_token(env, "root", "admin")
        dump = work / "callgrind.out"
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={dump}",
            sys.executable,
            "-m",
            "iris",
            "serve",
        ]
        log = work / "iris.log"
        with log.open("wb") as sink:
            server = subprocess.Popen(command, cwd=tree, env=env, stdout=sink, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_up(server, log, f"{base}/healthz", startup=STARTUP_SECONDS)
            threads, chat_part = asyncio.run(
                peers.prepare_iris(
                    base, admin, token, png, upstream, WARMUP + runs if target == "runs" else 1
                )
            )
            body = peers.runs_body(threads) if target == "runs" else peers.chat_body(chat_part)
            headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
            url = f"{base}{TARGETS[target]}"
            asyncio.run(_drive(url, headers, [body() for _ in range(WARMUP)]))
            subprocess.run(
                ["callgrind_control", "-i", "on", str(server.pid)], check=True, capture_output=True
            )
            asyncio.run(_drive(url, headers, [body() for _ in range(runs)]))
            subprocess.run(
                ["callgrind_control", "-i", "off", str(server.pid)], check=True, capture_output=True
            )
            subprocess.run(["callgrind_control", "-d", str(server.pid)], check=True, capture_output=True)
        finally:
            server.terminate()
            server.wait(120)
        dumps = sorted(work.glob("callgrind.out*"))
        counted = max((_total(d) for d in dumps), default=0)  # the requested dump; the exit dump is empty
    shutil.rmtree(work, ignore_errors=True)
    return counted / runs


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="counted requests per set-up")
    parser.add_argument("--before", metavar="REF", help="also count commit REF's server, side by side")
    args = parser.parse_args(argv)
    results = Results("instructions")
    if why := missing():
        print(f"instructions skipped: {why}")
        results.detail("skipped", why)
        results.write()
        return 0
    png = peers.png_100k()
    started_load = load()
    with tempfile.TemporaryDirectory(prefix="iris-instructions-") as scratch:
        tmp = Path(scratch)
        trees = {"this tree": ROOT}
        if args.before:
            trees[args.before] = checkout(args.before, tmp / "before")
        table: dict[str, dict[str, float]] = {}
        for name, tree in trees.items():
            for target in TARGETS:
                per = {n: count(tree, target, n, args.runs, tmp, png) for n in CHUNK_COUNTS}
                low, high = CHUNK_COUNTS
                chunk = (per[high] - per[low]) / (high - low)
                table[f"{name} {target}"] = {
                    "per_request_50_chunks_M": round(per[high] / 1e6, 2),
                    "per_request_10_chunks_M": round(per[low] / 1e6, 2),
                    "once_per_request_M": round((per[low] - low * chunk) / 1e6, 2),
                    "per_chunk_k": round(chunk / 1e3, 1),
                }
                print(f"{name} {TARGETS[target]}: {table[f'{name} {target}']}", flush=True)
    print()
    print(
        f"| M instructions per request ({args.runs} counted, load {started_load} → {load()}) | 50 chunks |"
        " 10 chunks | once | per chunk (k) |"
    )
    print("|---|---:|---:|---:|---:|")
    for name, row in table.items():
        print(
            f"| {name} | {row['per_request_50_chunks_M']} | {row['per_request_10_chunks_M']} |"
            f" {row['once_per_request_M']} | {row['per_chunk_k']} |"
        )
        for key, value in row.items():
            results.figure(f"{name}: {key}", value, "M" if key.endswith("_M") else "k")
    results.detail("load", [started_load, load()])
    results.write()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
