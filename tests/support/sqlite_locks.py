"""Another holder of a SQLite file's write lock, as another process would hold it: a connection of its
own thread (:func:`sqlite_locked`) or a real process (:func:`held_by_another_process`)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


@contextmanager
def sqlite_locked(path: str) -> Iterator[None]:
    """Another connection (its own thread, as another process would) holds the write lock."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        locked.set()
        release.wait(60)
        conn.execute("ROLLBACK")
        conn.close()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert locked.wait(10)
    try:
        yield
    finally:
        release.set()
        holder.join(10)


@contextmanager
def held_by_another_process(path: str) -> Iterator[float]:
    """Another process holds the file's write lock; yields when it took it (``time.monotonic()``)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        yield time.monotonic()
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(30)
