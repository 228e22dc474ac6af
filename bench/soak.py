"""Soak: a mixed workload at a fixed concurrency against a real Iris (SQLite + local storage, the default).

For DURATION seconds, CONCURRENCY clients each loop over a random mix of: a run with an uploaded image
(then its history is checked), a chat turn and a regenerate, an upload alone, a slow run the client
leaves and re-attaches to with ``Last-Event-ID`` (ids must keep increasing to the terminal event), a
slow run that is cancelled, and refused requests (a reused ``runId``, a thread already running,
someone else's thread, an empty message). Garbage collections happen as they come. Beside them
(issue 27): rounds of slow readers — a long run (about 9 MB of events) followed by 10 readers at about
1 KB/s that leave at once after 5 s, and by its own client, which reads nothing until the run is over and
must have been dropped with ``iris/streamDropped`` and re-attach with ``Last-Event-ID`` to every event
once (bench/_slow_readers.py); and, 30 % into the soak, a fresh Iris process on the same data dir whose
first requests — providers (a ``/healthz`` beside it), models, a run — are timed and whose own worst loop
stall is read (bench/_fresh_process.py).

Prints: requests, errors (a wrong status, a stream that does not end as it should, a transport
error), lost messages (a finished run or chat turn whose answer is missing from the history), p50/p99
latency (whole request, streams to their end), the server's worst event-loop stall (``GET /debug/loop``,
mounted because the server runs with ``IRIS_DEBUG=true``; see app/api/loop_monitor.py: the time the loop
thread was blocked, and how late it woke counting the time it waited for a CPU on a busy machine) and
its peak RSS (``VmHWM``); then the slow-reader and fresh-process figures. Target: 0 errors, 0 lost
(the slow readers' and the fresh process's included), max blocked stall < 250 ms on both servers, every
dropped reader re-attached complete. Exits non-zero when a target is missed.
``--duration`` (s, default 60) and ``--concurrency`` (default 8) change the mix's size.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
from _fresh_process import FreshProcess
from _iris import add_model, dev_token, iris
from _results import Results
from _slow_readers import READ_SECONDS, READERS, SlowReaders
from _soak_client import Client

DURATION = 60.0
CONCURRENCY = 8
FRESH_AT = 0.3
"""When the fresh process starts, as a share of the soak's duration."""
STALL_TARGET_MS = 250.0
SLOW_MODEL = {
    "name": "Slow",
    "provider": "local",
    "modelId": "slow",
    "type": "vision",
    "options": {"delayMs": 10},
}


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def soak(
    base: str, token: str, admin: str, pid: int, tmp: str, duration: float, concurrency: int
) -> int:
    port = int(base.rsplit(":", 1)[1])
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        await asyncio.to_thread(add_model, base, admin, SLOW_MODEL)
        clients = [Client(http, token, random.Random(i)) for i in range(concurrency)]
        slow = SlowReaders(Client(http, token, random.Random(-2)), port)
        fresh = FreshProcess(f"{tmp}/data", Path(tmp) / "iris-fresh.log", token, duration * FRESH_AT, Client)
        stop = time.monotonic() + duration
        await asyncio.gather(*(client.loop(stop) for client in clients), slow.loop(stop), fresh.run())
        loop = (await http.get("/debug/loop")).json()
    latencies = sorted(value for client in clients for value in client.latencies)
    everyone = [*clients, slow.client, *([fresh.client] if fresh.client else [])]
    errors = sum((client.errors for client in everyone), Counter())
    if fresh.failure:
        errors[fresh.failure] += 1
    lost = sum(client.lost for client in everyone)
    p50 = statistics.median(latencies) * 1000
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
    blocked = loop["maxBlockedMs"]
    fresh_blocked = fresh.ms.get("blocked")
    fresh_ok = fresh_blocked is not None and fresh_blocked < STALL_TARGET_MS
    reattached_ok = slow.rounds > 0 and slow.reattached == slow.rounds
    print(f"soak: {concurrency} clients for {duration:.0f} s against one Iris (SQLite, local storage)")
    print(f"  requests        {len(latencies)}")
    print(f"  errors          {sum(errors.values())}  {dict(errors) if errors else ''}")
    print(f"  lost messages   {lost}")
    print(f"  latency         p50 {p50:.0f} ms, p99 {p99:.0f} ms")
    print(
        f"  max loop stall  {blocked:.0f} ms blocked (target < {STALL_TARGET_MS:.0f} ms); "
        f"{loop['maxStallMs']:.0f} ms late, counting waits for a CPU"
    )
    print(f"  peak RSS        {peak_rss_mb(pid):.0f} MB")
    read = statistics.median(slow.bytes_read) / READ_SECONDS / 1024 if slow.bytes_read else 0.0
    print(
        f"  slow readers    {slow.rounds} rounds of a long run, {READERS} readers each at ~1 KB/s "
        f"(median {read:.1f} KB/s) leaving at once after {READ_SECONDS:.0f} s; "
        f"stalled readers dropped and re-attached with every event once: {slow.reattached} of {slow.rounds}"
    )
    print(f"  fresh process   {describe_fresh(fresh)}")
    met = not errors and lost == 0 and blocked < STALL_TARGET_MS and fresh_ok and reattached_ok
    print(f"  target          {'met' if met else 'MISSED'}  (load average {os.getloadavg()[0]:.2f})")
    results = Results("soak")
    results.figure("requests", len(latencies), "requests")
    results.figure("errors", sum(errors.values()), "requests", target="0", met=not errors)
    results.figure("lost_messages", lost, "messages", target="0", met=lost == 0)
    results.figure("latency_p50", p50, "ms")
    results.figure("latency_p99", p99, "ms")
    stall_target = f"< {STALL_TARGET_MS:.0f}"
    results.figure("max_loop_blocked", blocked, "ms", target=stall_target, met=blocked < STALL_TARGET_MS)
    results.figure("max_loop_late", loop["maxStallMs"], "ms")
    results.figure("server_peak_rss", peak_rss_mb(pid), "MB")
    results.figure("slow_reader_rounds", slow.rounds, "rounds")
    results.figure("slow_reader_median_rate", read, "KB/s")
    results.figure(
        "dropped_readers_reattached", slow.reattached, "readers", target=f"= {slow.rounds}", met=reattached_ok
    )
    for name in ("startup", "providers", "healthz", "models", "run", "late"):
        results.figure(f"fresh_{name}", fresh.ms.get(name), "ms")
    results.figure("fresh_max_loop_blocked", fresh_blocked, "ms", target=stall_target, met=fresh_ok)
    results.figure("load_average", os.getloadavg()[0], "")
    results.write()
    return 0 if met else 1


def describe_fresh(fresh: FreshProcess) -> str:
    if "blocked" not in fresh.ms:
        return f"not measured: {fresh.failure or 'its requests failed'}"
    ms = fresh.ms
    return (
        f"up in {ms['startup'] / 1000:.1f} s; first /api/providers {ms['providers']:.0f} ms "
        f"(/healthz beside it {ms['healthz']:.0f} ms), /api/models {ms['models']:.0f} ms, "
        f"a run {ms['run']:.0f} ms; its loop blocked at most {ms['blocked']:.0f} ms "
        f"(target < {STALL_TARGET_MS:.0f} ms), {ms['late']:.0f} ms late"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=DURATION, help="seconds of load (default 60)")
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY, help="clients of the mix (default 8)")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="iris-soak-") as tmp,
        iris(tmp, {"IRIS_DEBUG": "true"}) as (base, token, pid),
    ):
        env = {k: v for k, v in os.environ.items() if not k.startswith("IRIS_")}
        admin = dev_token({**env, "IRIS_DATA_DIR": f"{tmp}/data"}, "root", "admin")
        code = asyncio.run(soak(base, token, admin, pid, tmp, args.duration, args.concurrency))
        # the servers' own stall warnings say when a block happened, to set beside the mix's moves
        for log in sorted(Path(tmp).glob("iris*.log")):
            for line in log.read_text(errors="replace").splitlines():
                if "event loop blocked" in line:
                    print(f"  {log.name}: {line.strip()[:200]}")
        return code


if __name__ == "__main__":
    sys.exit(main())
