"""Upload throughput and server memory: 20 concurrent ~5 MB image uploads to a running Iris.

Starts a real server (`python -m iris serve`, SQLite + local storage in a temp dir), uploads the same
incompressible PNG 20 times at once (three rounds; medians), and prints:
- upload throughput (MB/s of file bytes accepted) and the same bytes copied to disk (write + fsync
  per file) in the same run, with the ratio (target: uploads within 3x of the disk copy);
- the server's peak RSS growth over its idle RSS, sampled every 5 ms (target: <= 150 MB).
"""

from __future__ import annotations

import asyncio
import io
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
from _iris import iris
from _results import Results
from PIL import Image

CONCURRENCY = 20
ROUNDS = 3  # medians: a single fsync'd disk copy varies by 2-3x from run to run
TARGET_BYTES = 5 * 1024 * 1024 - 64 * 1024


def noise_png(approx: int) -> bytes:
    side = int((approx / 3) ** 0.5)
    while True:
        buffer = io.BytesIO()
        Image.frombytes("RGB", (side, side), os.urandom(side * side * 3)).save(
            buffer, "PNG", compress_level=1
        )
        if buffer.tell() <= 5 * 1024 * 1024:
            return buffer.getvalue()
        side -= 8


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def disk_copy_seconds(data: bytes, directory: Path) -> float:
    start = time.perf_counter()
    for i in range(CONCURRENCY):
        with (directory / f"copy-{i}.png").open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    return time.perf_counter() - start


async def upload_all(base: str, token: str, data: bytes, pid: int) -> tuple[float, int, list[int]]:
    peak = 0
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_bytes(pid))
            await asyncio.sleep(0.005)

    async def one(client: httpx.AsyncClient) -> int:
        response = await client.post(
            f"{base}/api/files",
            files={"file": ("noise.png", data, "image/png")},
            data={"threadId": str(uuid.uuid4())},
            headers={"Authorization": f"Bearer {token}"},
        )
        return response.status_code

    limits = httpx.Limits(max_connections=CONCURRENCY)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        sampler = asyncio.create_task(sample())
        start = time.perf_counter()
        statuses = await asyncio.gather(*(one(client) for _ in range(CONCURRENCY)))
        elapsed = time.perf_counter() - start
        done.set()
        await sampler
    return elapsed, peak, list(statuses)


def main() -> int:
    data = noise_png(TARGET_BYTES)
    with tempfile.TemporaryDirectory(prefix="iris-bench-") as tmp:
        with iris(tmp) as (base, token, pid):
            # One warm-up upload so imports and first-use allocations are not counted as growth.
            asyncio.run(upload_all_once(base, token, data))
            idle = rss_bytes(pid)
            rounds = [asyncio.run(upload_all(base, token, data, pid)) for _ in range(ROUNDS)]
        disks = []
        for i in range(ROUNDS):
            copy_dir = Path(tmp) / f"copies-{i}"
            copy_dir.mkdir()
            disks.append(disk_copy_seconds(data, copy_dir))
    elapsed = statistics.median(r[0] for r in rounds)
    peak = max(r[1] for r in rounds)
    statuses = [s for r in rounds for s in r[2]]
    disk = statistics.median(disks)

    total_mb = len(data) * CONCURRENCY / 1e6
    ok = statuses.count(201)
    total = CONCURRENCY * ROUNDS
    growth_mb = (peak - idle) / 1e6
    ratio = elapsed / disk
    size = f"{len(data) / 1e6:.2f} MB"
    print(f"uploads: {ROUNDS} rounds of {CONCURRENCY} x {size} at once, {ok}/{total} answered 201")
    print(f"upload throughput: {total_mb / elapsed:8.1f} MB/s  (median round {elapsed:.3f} s)")
    print(f"disk copy (fsync): {total_mb / disk:8.1f} MB/s  (median round {disk:.3f} s)")
    print(f"ratio upload/disk time: {ratio:.2f}x  (target <= 3x: {'met' if ratio <= 3 else 'NOT met'})")
    print(
        f"server RSS: idle {idle / 1e6:.1f} MB, peak {peak / 1e6:.1f} MB, growth {growth_mb:.1f} MB", end=""
    )
    print(f"  (target <= 150 MB: {'met' if growth_mb <= 150 else 'NOT met'})")
    results = Results("upload")
    results.figure("uploads_answered_201", ok, f"of {total}", target=f"{total}", met=ok == total)
    results.figure("upload_throughput", total_mb / elapsed, "MB/s")
    results.figure("disk_copy_throughput", total_mb / disk, "MB/s")
    results.figure("ratio_upload_to_disk_time", ratio, "x", target="<= 3", met=ratio <= 3)
    results.figure("server_rss_idle", idle / 1e6, "MB")
    results.figure("server_rss_growth", growth_mb, "MB", target="<= 150", met=growth_mb <= 150)
    results.write()
    return 0 if ok == total else 1


async def upload_all_once(base: str, token: str, data: bytes) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        response = await client.post(
            f"{base}/api/files",
            files={"file": ("warm.png", data, "image/png")},
            data={"threadId": str(uuid.uuid4())},
            headers={"Authorization": f"Bearer {token}"},
        )
        response.raise_for_status()


if __name__ == "__main__":
    sys.exit(main())
