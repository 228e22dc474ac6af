"""The metrics listener of ``IRIS_METRICS_ADDRESS``: ``/metrics`` only, no token, on its own port.

prometheus_client's WSGI app on a small threaded server (a scrape every few seconds needs no more),
started with the app and stopped with it. In multiprocess mode every worker process listens on the
address (``SO_REUSEPORT``): whichever one a scrape reaches answers for all of them.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from iris.app.settings.values import parse_address
from iris.app.telemetry.metrics import exposition


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not logged (one every few seconds)."""


def _server_class(host: str, shared: bool) -> type[WSGIServer]:
    class Server(WSGIServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        allow_reuse_port = shared
        daemon_threads = True

    return Server


class MetricsListener:
    """Serves ``/metrics`` on ``address`` (``host:port``) from a thread until :meth:`stop`."""

    def __init__(self, address: str, multiproc_dir: str | None) -> None:
        self.host, self.port = parse_address(address)
        self._dir = multiproc_dir
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Bind and serve; a port in use is an ``OSError`` at start-up, not later."""
        self._server = make_server(
            self.host,
            self.port,
            self._app,
            _server_class(self.host, self._dir is not None),
            handler_class=_Quiet,
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="metrics listener", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != "/metrics":
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"only /metrics is served here\n"]
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Allow", "GET, HEAD")])
            return [b""]
        body, content_type = exposition(self._dir)
        start_response("200 OK", [("Content-Type", content_type), ("Content-Length", str(len(body)))])
        return [body]
