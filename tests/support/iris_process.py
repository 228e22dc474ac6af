"""Iris as a real separate process (`python -m iris serve`): for what only processes can show —
a second instance sharing the database, and a process killed with SIGKILL mid-run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from iris.app.persistence.migrations import REPO_ROOT
from tests.support.waits import REQUEST_SECONDS, SERVER_SECONDS


@dataclass
class IrisProcess:
    base_url: str
    process: subprocess.Popen[bytes]
    log: Path

    def pause(self) -> None:
        """SIGSTOP: the process is frozen where it is (nothing more streamed, nothing more logged)."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, nothing is flushed."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(SERVER_SECONDS)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def iris_process(settings_env: Mapping[str, str], port: int, log: Path) -> Iterator[IrisProcess]:
    """Serve Iris on ``port`` with ``IRIS_*`` settings from ``settings_env`` (no other environment but
    PATH); waits for ``/healthz`` to answer, stops it (SIGTERM, then SIGKILL) on exit. Each wait is bounded
    by tests/support/waits.py."""
    env = {"PATH": os.environ.get("PATH", ""), **settings_env, "IRIS_PORT": str(port)}
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "iris", "serve"],
            cwd=REPO_ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        running = IrisProcess(base_url=f"http://127.0.0.1:{port}", process=process, log=log)
        try:
            deadline = time.monotonic() + SERVER_SECONDS
            while True:
                try:  # refused at once until the port listens; then the answer may take a loaded while
                    if httpx.get(f"{running.base_url}/healthz", timeout=REQUEST_SECONDS).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"Iris did not come up within {SERVER_SECONDS:.0f} s:\n{running.output()}"
                    )
                time.sleep(0.1)
            yield running
        finally:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(SERVER_SECONDS)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(SERVER_SECONDS)
