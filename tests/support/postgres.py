"""A throwaway PostgreSQL cluster: temp dir, free loopback port, stopped afterwards.

PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` system user.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from tests.support.waits import SERVER_SECONDS, SUBPROCESS_SECONDS

_PG_WAIT = str(int(SERVER_SECONDS))  # pg_ctl -w -t: whole seconds


def free_port() -> int:
    """A TCP port nobody listens on right now on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class TemporaryCluster:
    """``initdb`` + ``pg_ctl start`` in a temp dir; :meth:`stop` removes it all."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="iris-pg-"))
        self.data = self.dir / "data"
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            if shutil.which("runuser") is None:
                raise RuntimeError("running as root and runuser is missing")
            shutil.chown(self.dir, user="postgres")
            self._as_user = ["runuser", "-u", "postgres", "--"]

    @staticmethod
    def unavailable_reason() -> str | None:
        """Why a cluster cannot be started here, or ``None`` when it can."""
        for tool in ("initdb", "pg_ctl"):
            if shutil.which(tool) is None:
                return f"{tool} is not on PATH"
        if os.geteuid() == 0:
            try:
                import pwd

                pwd.getpwnam("postgres")
            except KeyError:
                return "running as root and there is no 'postgres' user to run the server as"
        return None

    def _run(self, *args: str) -> None:
        subprocess.run([*self._as_user, *args], check=True, capture_output=True, timeout=SUBPROCESS_SECONDS)

    def start(self) -> str:
        """Start the server; returns a ``postgresql+asyncpg://`` URL for the ``postgres`` superuser."""
        self._run(
            shutil.which("initdb") or "initdb",
            "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale",
        )  # fmt: skip
        self.resume()
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"

    def resume(self) -> None:
        """Start the (initialised) server again after :meth:`halt`."""
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.dir} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run(
            shutil.which("pg_ctl") or "pg_ctl",
            "-D", str(self.data), "-o", options, "-l", str(self.dir / "log"), "-w", "-t", _PG_WAIT, "start",
        )  # fmt: skip

    def halt(self) -> None:
        """Stop the server (fast: open connections are cut) and keep its data, as an outage would."""
        self._run(
            shutil.which("pg_ctl") or "pg_ctl",
            "-D",
            str(self.data),
            "-m",
            "fast",
            "-w",
            "-t",
            _PG_WAIT,
            "stop",
        )

    def stop(self) -> None:
        """Stop the server (fast) and delete its directory."""
        try:
            self.halt()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
