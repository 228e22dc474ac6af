"""How long storing a large answer blocks the event loop on SQLite (issue 26; bench/soak.py found
376 to 396 ms for a ~9 MB answer).

SQLite runs inline on the loop (app/persistence/sqlite.py). Here an engine built as the app builds it
writes what a run's closing transaction writes for a ``SIZE_MB`` answer — the message row (its text and
its metadata, which repeats it) and the log's last event (``TEXT_MESSAGE_END``, whose metadata repeats
it too) — and commits, ``ROUNDS`` times, while a ticker on the same loop records how late each of its
1 ms sleeps woke: the worst lateness is the stall a concurrent request would have seen. Small writes
(a normal run's) are timed the same way beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import msgspec
from sqlalchemy import JSON, Column, Integer, MetaData, Table, Text, insert

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/, for _results and _iris
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository, for app and providers

from _results import Results

from iris.app.persistence.db import create_engine

SIZE_MB = 9
ROUNDS = 5
TICK = 0.001

_metadata = MetaData()
_probe = Table(
    "stall_probe",
    _metadata,
    Column("id", Integer, primary_key=True),
    Column("body", Text),
    Column("meta", JSON),
)


async def _ticker(stop: asyncio.Event, late: list[float]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(TICK)
        late.append((time.perf_counter() - started - TICK) * 1000)


async def worst_stall(size: int, rounds: int) -> tuple[float, float]:
    """(worst loop lateness ms, median write+commit ms) over ``rounds`` writes of ``size`` bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = create_engine(f"sqlite+aiosqlite:///{tmp}/stall.db")
        async with engine.begin() as connection:
            await connection.run_sync(_metadata.create_all)
        answer = "word " * (size // 5)
        stop, late = asyncio.Event(), list[float]()
        ticker = asyncio.create_task(_ticker(stop, late))
        took: list[float] = []
        try:
            for _ in range(rounds):
                await asyncio.sleep(0.05)
                started = time.perf_counter()
                async with engine.begin() as connection:
                    await connection.execute(
                        insert(_probe),
                        [
                            {"body": answer, "meta": {"worker_agent_output": {"answer": answer}}},
                            {
                                "body": "",
                                "meta": msgspec.Raw(msgspec.json.encode({"metadata": {"a": answer}})),
                            },
                        ],
                    )
                took.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.05)
        finally:
            stop.set()
            await ticker
            await engine.dispose()
        return max(late), statistics.median(took)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=SIZE_MB)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    results = Results("large_write_stall")
    for label, size in (("small (2 KB)", 2_000), (f"large ({args.size_mb:g} MB)", int(args.size_mb * 1e6))):
        stall, took = asyncio.run(worst_stall(size, args.rounds))
        load = os.getloadavg()[0]
        print(
            f"{label}: worst loop stall {stall:.1f} ms,"
            f" write + commit {took:.1f} ms (median), load {load:.2f}"
        )
        key = "small" if size == 2_000 else "large"
        results.figure(f"{key}_worst_stall", stall, "ms")
        results.figure(f"{key}_write_ms", took, "ms")
        results.figure(f"{key}_load_average", load, "1-minute")
    results.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
