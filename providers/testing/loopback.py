"""Serve an ASGI app on a real loopback socket, so clients are tested over actual HTTP.

A fake of a vendor's API (an ASGI app speaking its real wire format) runs here, and the provider under
test exercises its real transport (streamed bodies, timeouts, connection reuse) instead of a mock.
Iris's own tests run their OpenAI, Anthropic, Gemini, Ollama and Supabase fakes the same way.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

import uvicorn

ASGIApp = Callable[..., Awaitable[Any]]


@contextmanager
def serve_asgi(
    app: ASGIApp,
    *,
    startup_timeout: float = 120.0,
    shutdown_timeout: int = 5,
    lifespan: Literal["on", "off"] = "off",
) -> Iterator[str]:
    """Run ``app`` in a background thread on ``127.0.0.1``; yields its base URL ``http://127.0.0.1:PORT``.

    The socket is bound here (port 0) and handed to uvicorn, so there is no race for a "free" port.
    On exit the server stops accepting, finishes in-flight requests for up to ``shutdown_timeout``
    seconds, then cancels whatever is still running. Fakes need no lifespan; Iris itself does (``"on"``),
    and its start-up imports every provider (LiteLLM's import alone takes seconds on a busy machine),
    hence the generous ``startup_timeout``.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        interface="asgi3",  # auto-detection mistakes bound methods (``fake.app``) for ASGI2
        lifespan=lifespan,
        proxy_headers=False,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=shutdown_timeout,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"asgi:{port}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + startup_timeout
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the ASGI test server exited during startup")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the ASGI test server did not start within {startup_timeout}s")
            time.sleep(0.005)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(shutdown_timeout + 5)
        if thread.is_alive():
            server.force_exit = True
            thread.join(5)
        sock.close()
