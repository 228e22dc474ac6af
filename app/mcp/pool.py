"""The MCP connections one process keeps: one per server, made on first use, replaced when the
server's configuration changes (every process reads it from the database, so an edit made through
another process is picked up by the next run that names the server).

The MCP SDK (with its generated protocol types) is about 47 MiB resident and a third of a second of
imports, so :mod:`iris.app.mcp.connection` is imported only when a first connection is made, on a thread
with the collector paused (as providers are, :mod:`iris.providers.registry`): a process without MCP servers
never holds it, and one that starts using them keeps its loop going meanwhile.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from iris.app.mcp.config import ServerConfig
from iris.providers.registry import collection_paused

if TYPE_CHECKING:
    from iris.app.mcp.connection import ServerConnection
    from iris.app.mcp.listing import McpTool
    from iris.app.mcp.oauth.grants import OAuthRuntime

CONNECTION_MODULE = "iris.app.mcp.connection"
OAUTH_MODULE = "iris.app.mcp.oauth.connection"
SWEEP_EVERY_SECONDS = 60.0
"""How often the pool looks for users' connections left idle (on its next use, never on a timer)."""

_import_guard = threading.Lock()
_import: Future[ModuleType] | None = None
"""The one import of :mod:`iris.app.mcp.connection` in this process: set once a first caller starts it,
resolved when the module is whole. Every caller (on any event loop) awaits this future, never
``sys.modules``, which holds the module from the moment its import *starts*: a second first use while
the thread is still importing would otherwise get a half-initialised module."""


async def connection_module() -> ModuleType:
    """:mod:`iris.app.mcp.connection`, imported on a thread the first time (see the module docstring); every
    caller awaits that same import, however many arrive while it runs."""
    global _import
    loading = _import
    if loading is not None and loading.done() and loading.exception() is None:
        return loading.result()
    with _import_guard:
        start = _import is None or (_import.done() and _import.exception() is not None)
        if start:
            _import = Future()
        loading = _import
        assert loading is not None
    if start:
        threading.Thread(
            target=_import_connection, args=(loading,), name="iris mcp import", daemon=True
        ).start()
    return await asyncio.wrap_future(loading)


def _import_connection(into: Future[ModuleType]) -> None:
    """The import itself, its module or its failure given to every waiter (a failed import is tried
    again by the next use)."""
    try:
        with collection_paused():
            module = importlib.import_module(CONNECTION_MODULE)
    except BaseException as exc:  # every waiter hears of it, whatever it is
        into.set_exception(exc)
    else:
        into.set_result(module)


class McpPool:
    """Connections by server name. ``environ`` is where ``${VAR}`` in headers and env are read;
    ``ask_ttl_seconds``: how long a server's question to the user waits (the interrupt TTL)."""

    def __init__(
        self,
        environ: Mapping[str, str],
        *,
        tools_ttl_seconds: float,
        log_dir: Path | None = None,
        ask_ttl_seconds: float = 3600.0,
    ) -> None:
        self._environ = environ
        self._ttl = tools_ttl_seconds
        self._ask_ttl = ask_ttl_seconds
        self._log_dir = log_dir
        self._connections: dict[tuple[str, str], ServerConnection] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._shared_tools: dict[str, list[McpTool]] = {}
        self._used: dict[tuple[str, str], float] = {}
        self._swept = time.monotonic()
        self.oauth: OAuthRuntime | None = None
        """Set by the app (it needs the database): without it an OAuth-protected server cannot be used."""

    async def connection(self, config: ServerConfig, owner: str | None = None) -> ServerConnection:
        """The live connection for this configuration (a new one if it changed since); for a server
        each user signs in to, ``owner``'s own (``None``: the one the admin API shows)."""
        per_user = config.oauth is not None and config.oauth.per_user
        key = (config.name, (owner or "") if per_user else "")
        self._used[key] = now = time.monotonic()
        if now - self._swept >= min(SWEEP_EVERY_SECONDS, self._ask_ttl):
            self._swept = now
            self._leave_idle(now)
        current = self._connections.get(key)
        if current is not None and current.config.version == config.version:
            return current
        module = await connection_module()
        current = self._connections.get(key)  # another task may have made it meanwhile
        if current is not None and current.config.version == config.version:
            return current
        if current is not None:
            self._retire(current)
        self._connections[key] = fresh = self._connect(module, config, key[1])
        return fresh

    def _connect(self, module: ModuleType, config: ServerConfig, owner: str) -> ServerConnection:
        options: dict[str, Any] = {
            "tools_ttl_seconds": self._ttl,
            "log_dir": self._log_dir,
            "ask_ttl_seconds": self._ask_ttl,
        }
        if config.oauth is None or self.oauth is None:
            connection: ServerConnection = module.ServerConnection(config, self._environ, **options)
            return connection
        oauth = importlib.import_module(OAUTH_MODULE)  # cheap: the SDK is loaded by now
        authorized: ServerConnection = oauth.AuthorizedConnection(
            config, self._environ, runtime=self.oauth, owner=owner, shared_tools=self._shared_tools, **options
        )
        return authorized

    @property
    def environ(self) -> Mapping[str, str]:
        """Where ``${VAR}`` in its servers' headers and env are read."""
        return self._environ

    def known(self, name: str) -> ServerConnection | None:
        """The connection made for this server, if any (health for the admin API)."""
        return self._connections.get((name, ""))

    def retire(self, name: str, owner: str | None = None) -> None:
        """Leave a server that was disabled, deleted or renamed (every user's connection to it), or
        only ``owner``'s (who revoked it)."""
        for key in [k for k in self._connections if k[0] == name and owner in (None, k[1])]:
            self._drop(key)

    def _leave_idle(self, now: float) -> None:
        """Close users' own connections (a per-user OAuth server's) unused for longer than a question may
        wait, none with a call or sign-in under way: a process would otherwise keep one per user who ever
        called the server. The user's tokens stay stored; their next call connects again."""
        for key, connection in list(self._connections.items()):
            if key[1] and now - self._used.get(key, now) > self._ask_ttl and not connection.busy:
                self._drop(key)

    def _drop(self, key: tuple[str, str]) -> None:
        """Forget the connection under ``key``, and when it was last used, and close it."""
        self._used.pop(key, None)
        self._retire(self._connections.pop(key))

    def owners(self, name: str) -> set[str]:
        """The users with a connection of their own to server ``name`` in this process."""
        return {key[1] for key in self._connections if key[0] == name and key[1]}

    def keep_only(self, names: Iterable[str]) -> None:
        """Leave every server not among ``names`` (the enabled ones)."""
        for name in {key[0] for key in self._connections} - set(names):
            self.retire(name)

    async def close(self) -> None:
        """Leave every server (shutdown), those still being retired too (a stdio server's process is
        gone before the loop is)."""
        connections, self._connections = list(self._connections.values()), {}
        retiring = list(self._closing)
        await asyncio.gather(*(c.close() for c in connections), *retiring, return_exceptions=True)

    def _retire(self, connection: ServerConnection) -> None:
        task = asyncio.get_running_loop().create_task(connection.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
