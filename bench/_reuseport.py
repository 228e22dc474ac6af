"""Bench-only launcher: ``python -m iris serve`` on a port other Iris processes listen on too.

Its listening socket gets ``SO_REUSEPORT`` (nothing in the app changes), so several processes started
with the same ``IRIS_PORT`` share it and the kernel spreads new connections over them: one address,
several processes on one database, as behind a load balancer.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import iris.app.__main__ as iris_main


def _shared(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


if __name__ == "__main__":
    iris_main._listen = _shared
    iris_main.main(["serve"])
