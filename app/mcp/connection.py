"""One MCP server's live connection: connect, discover its tools, call them, and come back after a
crash, without ever hanging or failing the run that asked.

The SDK's ``Client`` is an async context that must be entered and left by one task, so each
connection has an owner task that holds it open; calls from runs go through it concurrently. Every
wait is bounded: connecting by the server's connect timeout, a call by its call timeout (the SDK
then sends ``notifications/cancelled``, as it does when the calling run is cancelled). A server that
is down or closes the connection gives the caller a :class:`tools.ToolFailed` (the model sees a
tool error) and is reconnected after a backoff (0.5 s doubling to 30 s); an idle connection re-lists
the tools every 30 s, so a crash is noticed before the next call. A call carries the W3C trace
context of its ``execute_tool`` span (:mod:`iris.app.mcp.tracing`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import time
from collections.abc import Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, cast

import httpx2
import mcp_types as mt
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import LOG_LEVEL_META_KEY
from pydantic import ValidationError

from iris.app.mcp.config import MissingVariable, ServerConfig, stderr_log
from iris.app.mcp.elicitation import AskedCall, Question, current_call, new_question, visit_pages
from iris.app.mcp.listing import McpPrompt, McpTool, listed_tool
from iris.app.mcp.prompts import LIST_PAGES, get_prompt, list_prompts
from iris.app.mcp.results import tool_result
from iris.app.mcp.tasks import run_task
from iris.app.mcp.tracing import carry_trace_context, trace_meta
from iris.tools import LogHook, ProgressHook, ToolFailed, ToolResult

log = logging.getLogger("iris.mcp")

MAX_BACKOFF_SECONDS = 30.0
EAGER_RETRIES = 5
"""Failed connects retried in the background before waiting for the next use to try again."""
HEARTBEAT_SECONDS = 30.0
STATELESS_REVISION = "2026-07-28"
"""The first protocol revision without sessions (revisions are dates, so they compare as strings)."""


class ServerConnection:
    """See the module docstring. ``tools_ttl_seconds``: how long a tool list is trusted (a
    ``notifications/tools/list_changed`` refreshes it at once)."""

    def __init__(
        self,
        config: ServerConfig,
        environ: Mapping[str, str],
        *,
        tools_ttl_seconds: float,
        log_dir: Path | None = None,
        ask_ttl_seconds: float = 3600.0,
    ) -> None:
        self.config = config
        self._ask_ttl = ask_ttl_seconds
        self._asked: list[AskedCall] = []
        self._environ = environ
        self._ttl = tools_ttl_seconds
        self._log_dir = log_dir
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._attempt: asyncio.Future[Client] | None = None
        self._broken = asyncio.Event()
        self._closing = False
        self._closed = asyncio.Event()
        self._relisting: asyncio.Task[None] | None = None
        self._in_flight = 0
        self._log_hooks: list[LogHook] = []
        self._tools: list[McpTool] = []
        self._listed_at: float | None = None
        self._listed_ttl = tools_ttl_seconds
        self._stale = False
        self._failures = 0
        self._retry_at = 0.0
        self.state = "idle"
        self.error: str | None = None
        self.connected_at: dt.datetime | None = None
        self.protocol_version: str | None = None

    @property
    def busy(self) -> bool:
        """A call under way, a question to its user included (the pool closes no busy connection)."""
        return self._in_flight > 0

    async def tools(self) -> list[McpTool]:
        """Its tools, connected (bounded) or re-listed when stale; unreachable, its last list (or none)."""
        try:
            client = await self._ensure()
            if (
                self._stale
                or self._listed_at is None
                or time.monotonic() - self._listed_at > self._listed_ttl
            ):
                async with asyncio.timeout(self.config.connect_timeout_seconds):
                    await self._list(client)
        except (ToolFailed, TimeoutError, MCPError, ValidationError) as exc:
            log.info("mcp %s: tools not refreshed: %s", self.config.name, exc)
        return list(self._tools)

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        progress: ProgressHook | None = None,
        log: LogHook | None = None,
    ) -> ToolResult:
        """One call within the server's call timeout; anything but an answer is a :class:`ToolFailed`
        with a reason the model can read. ``progress``: the request carries a progress token and the
        server's ``notifications/progress`` for it go there; ``log``: the call asks for log lines
        (``info`` and up) and those the server sends while it is the only call in flight go there
        (a log line names no request, so with several calls at once none can be told whose it is).
        A call whose server asks the user a question raises
        :class:`iris.app.mcp.elicitation.InputRequired` and keeps waiting, in its own task, for the
        answer (:mod:`iris.app.mcp.elicitation`); the time the user takes is not the server's."""
        name = self.config.name
        client = await self._ensure()
        asked = AskedCall(name, f"{name}__{tool}", self._ask_ttl)
        asked.start(self._call(client, asked, tool, arguments, progress=progress, log=log))
        return await asked.next(self.config.call_timeout_seconds)

    async def _call(
        self,
        client: Client,
        asked: AskedCall,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        progress: ProgressHook | None,
        log: LogHook | None,
    ) -> ToolResult:
        """The call itself, unbounded here (:meth:`AskedCall.next` bounds it and cancels it, which the
        SDK tells the server): a question may keep it open for as long as the user may answer."""
        name = self.config.name
        self._in_flight += 1
        if log is not None:
            self._log_hooks.append(log)
        self._asked.append(asked)
        try:
            while True:
                try:
                    result = await self._call_once(client, tool, arguments, progress, log is not None)
                    break
                except MCPError as exc:  # -32042: pages to visit first, then the call again
                    if exc.code != mt.URL_ELICITATION_REQUIRED or not await visit_pages(asked, exc.data):
                        raise
        except MCPError as exc:
            if exc.code == mt.CONNECTION_CLOSED:
                self._break(f"closed the connection during a call to {tool}")
                raise ToolFailed(
                    f"the MCP server {name} closed the connection; it is being restarted"
                ) from None
            raise ToolFailed(f"the MCP server {name} refused the call: {exc}") from None
        except (OSError, httpx2.HTTPError, ValidationError, RuntimeError) as exc:
            self._break(f"{type(exc).__name__}: {exc}")
            raise ToolFailed(f"the MCP server {name} failed: {type(exc).__name__}") from None
        finally:
            self._in_flight -= 1
            if log is not None:
                self._log_hooks.remove(log)
            self._asked.remove(asked)
        return tool_result(result, f"{name}__{tool}")

    async def _call_once(
        self,
        client: Client,
        tool: str,
        arguments: Mapping[str, Any],
        progress: ProgressHook | None,
        logs: bool,
    ) -> mt.CallToolResult:
        """One ``tools/call`` (or a task, for a tool that runs only as one), carrying the trace context,
        a progress token when ``progress`` is given, and a request for log lines when ``logs``."""
        if any(listed.task for listed in self._tools if listed.name == tool):
            return await run_task(client, tool, arguments, request_seconds=self.config.call_timeout_seconds)
        meta = trace_meta()
        if logs:
            meta = cast("mt.RequestParamsMeta", {**(meta or {}), LOG_LEVEL_META_KEY: "info"})
        return await client.call_tool(tool, dict(arguments), progress_callback=progress, meta=meta)

    async def _elicit(self, context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        """A server's question: put to the user by the asking call's run; with no such call, ``cancel``."""
        asked = current_call(self._asked)
        if asked is None:
            log.warning("mcp %s: a question with no single call in flight was cancelled", self.config.name)
            return mt.ElicitResult(action="cancel")
        question: Question
        if isinstance(params, mt.ElicitRequestURLParams):
            question = new_question(
                asked,
                mode="url",
                message=params.message,
                url=params.url,
                elicitation_id=params.elicitation_id,
            )
        else:
            question = new_question(
                asked, mode="form", message=params.message, schema=dict(params.requested_schema)
            )
        given = await asked.ask(question)
        if given.action == "accept" and question.mode == "form":
            return mt.ElicitResult(action="accept", content=given.content or {})
        return mt.ElicitResult(action=given.action)

    async def prompts(self) -> list[McpPrompt]:
        """The prompts the server lists now (:func:`iris.app.mcp.prompts.list_prompts`)."""
        client = await self._ensure()
        return await list_prompts(client, self.config.name, self.config.connect_timeout_seconds)

    async def prompt(self, name: str, arguments: Mapping[str, str]) -> str:
        """One prompt's messages as text, within the call timeout (a :class:`ToolFailed` if refused)."""
        client = await self._ensure()
        return await get_prompt(client, self.config.name, name, arguments, self.config.call_timeout_seconds)

    def cached_tools(self) -> list[McpTool]:
        """The tools it listed last, without connecting."""
        return list(self._tools)

    def health(self) -> dict[str, Any]:
        """``state`` (idle, connecting, connected, down), the last ``error``, tool count, next retry, and
        the protocol revision the connection negotiated (the last one, while down)."""
        out: dict[str, Any] = {"state": self.state, "tools": len(self._tools)}
        if self.protocol_version is not None:
            out["protocolVersion"] = self.protocol_version
        if self.error:
            out["error"] = self.error
        if self.connected_at is not None:
            out["connectedAt"] = self.connected_at.isoformat(timespec="seconds")
        if self.state == "down" and self._retry_at > time.monotonic():
            out["retryInSeconds"] = round(self._retry_at - time.monotonic(), 1)
        return out

    async def close(self) -> None:
        """Leave the server (a stdio one is stopped); safe to call twice."""
        self._closing = True
        self._closed.set()
        self._broken.set()
        if self._task is not None and not self._task.done():
            try:
                async with asyncio.timeout(10):
                    await asyncio.shield(self._task)
            except (TimeoutError, Exception):
                self._task.cancel()
        self.state = "idle"

    # -- the owner task ---------------------------------------------------------------------------------

    async def _ensure(self) -> Client:
        if self._client is not None and not self._broken.is_set():
            return self._client
        if self._closing:
            raise ToolFailed(f"the MCP server {self.config.name} is being removed")
        if self._task is None or self._task.done():
            wait = self._retry_at - time.monotonic()
            if wait > 0:
                raise ToolFailed(
                    f"the MCP server {self.config.name} is down ({self.error}); next try in {wait:.0f} s"
                )
            self._attempt = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._own(), name=f"mcp:{self.config.name}")
        assert self._attempt is not None
        try:
            async with asyncio.timeout(self.config.connect_timeout_seconds + 1):
                return await asyncio.shield(self._attempt)
        except TimeoutError:
            raise ToolFailed(f"the MCP server {self.config.name} did not connect in time") from None
        except ToolFailed:
            raise
        except Exception as exc:
            raise ToolFailed(f"the MCP server {self.config.name} is down: {exc}") from None

    async def _own(self) -> None:
        """Connect, stay connected until broken, back off, reconnect (a few times eagerly)."""
        retries = 0
        while not self._closed.is_set():
            attempt = self._attempt
            if attempt is None or attempt.done():
                attempt = self._attempt = asyncio.get_running_loop().create_future()
            was_up = await self._connect_once(attempt)
            if self._closed.is_set():
                break
            self._failures = 1 if was_up else self._failures + 1
            retries = 0 if was_up else retries + 1
            delay = min(MAX_BACKOFF_SECONDS, 0.5 * 2 ** (self._failures - 1))
            self._retry_at = time.monotonic() + delay
            self.state = "down"
            if retries >= EAGER_RETRIES:
                break  # the next use tries again, once the backoff has passed
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._closed.wait()

    async def _connect_once(self, attempt: asyncio.Future[Client]) -> bool:
        """One connection's life; whether it got connected. Never raises."""
        self.state = "connecting"
        self._broken.clear()
        connected = False
        try:
            async with AsyncExitStack() as stack:
                async with asyncio.timeout(self.config.connect_timeout_seconds):
                    client = await stack.enter_async_context(self._client_for(stack))
                    await self._list(client)
                self._client, connected = client, True
                self.protocol_version = client.protocol_version
                self.state, self.error = "connected", None
                self.connected_at = dt.datetime.now(dt.UTC)
                self._failures = 0
                log.info("mcp %s: connected, %d tools", self.config.name, len(self._tools))
                if not attempt.done():
                    attempt.set_result(client)
                if client.protocol_version >= STATELESS_REVISION:
                    stack.callback(asyncio.get_running_loop().create_task(self._listen(client)).cancel)
                await self._stay(client)
        except MissingVariable as exc:
            self.error = str(exc)
        except TimeoutError:
            self.error = self.error or f"did not connect within {self.config.connect_timeout_seconds:g} s"
        except (Exception, ExceptionGroup) as exc:
            self.error = self.error or _describe(exc)
        finally:
            self._client = None
        if not connected:
            log.warning("mcp %s: cannot connect: %s", self.config.name, self.error)
        elif not self._closing:
            log.warning("mcp %s: connection lost: %s", self.config.name, self.error)
        if not attempt.done():
            attempt.set_exception(ToolFailed(f"the MCP server {self.config.name} is down: {self.error}"))
            attempt.exception()
        return connected

    async def _stay(self, client: Client) -> None:
        """Until broken or closing; while no call is in flight, re-list the tools now and then, which
        notices a server that died (the 2026-07-28 protocol has no ping) and refreshes the list."""
        while not self._broken.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(HEARTBEAT_SECONDS):
                    await self._broken.wait()
                    return
            if self._in_flight > sum(call.asking for call in self._asked):
                continue  # a call is busy at the server (one waiting for the user is not)
            try:
                async with asyncio.timeout(self.config.connect_timeout_seconds):
                    await self._list(client)
            except Exception as exc:
                self.error = f"the server stopped answering: {_describe(exc)}"
                return

    def _break(self, reason: str) -> None:
        self.error = reason
        self._broken.set()

    def _client_for(self, stack: AsyncExitStack) -> Client:
        config = self.config

        async def on_message(message: Any) -> None:
            if isinstance(message, mt.ToolListChangedNotification):
                self._stale = True  # the next tools() re-lists; so does a task started now
                self._relisting = asyncio.get_running_loop().create_task(self._relist_soon())

        async def on_log(params: mt.LoggingMessageNotificationParams) -> None:
            if self._in_flight == 1 and len(self._log_hooks) == 1:
                data = params.data
                text = data if isinstance(data, str) else json.dumps(data, default=str)
                self._log_hooks[0](params.level, text, params.logger)

        if config.transport == "http":
            assert config.url is not None
            http = httpx2.AsyncClient(
                headers=config.expanded_headers(self._environ),
                timeout=httpx2.Timeout(
                    config.connect_timeout_seconds, read=max(config.call_timeout_seconds, 30)
                ),
                event_hooks={"request": [carry_trace_context]},
                auth=self._http_auth(),
            )
            stack.push_async_callback(http.aclose)
            transport: Any = streamable_http_client(config.url, http_client=http)
        else:
            assert config.command is not None
            params = StdioServerParameters(
                command=config.command, args=list(config.args), env=config.expanded_env(self._environ)
            )
            transport = stdio_client(params, errlog=stderr_log(self._log_dir, config.name, stack))
        return Client(
            transport, message_handler=on_message, logging_callback=on_log, elicitation_callback=self._elicit
        )

    def _http_auth(self) -> httpx2.Auth | None:
        """How an HTTP connection authorizes (:mod:`iris.app.mcp.oauth.connection` signs in per user)."""
        return None

    async def _listen(self, client: Client) -> None:
        """2026-07-28 has no session to carry ``notifications/tools/list_changed``: a
        ``subscriptions/listen`` stream does, for as long as the connection lives."""
        try:
            async with client.listen(tools_list_changed=True) as events:
                async for _ in events:
                    self._stale = True
                    await self._relist_soon()
        except Exception as exc:  # a server without subscriptions: the TTL alone refreshes the list
            log.info("mcp %s: no tools/list_changed subscription: %s", self.config.name, _describe(exc))

    async def _relist_soon(self) -> None:
        client = self._client
        if client is None:
            return
        try:
            async with asyncio.timeout(self.config.connect_timeout_seconds):
                await self._list(client)
        except Exception as exc:
            log.info("mcp %s: re-listing after tools/list_changed failed: %s", self.config.name, exc)

    async def _list(self, client: Client) -> None:
        """Every page of ``tools/list``; the list is trusted for the server's ``ttlMs`` (the shortest of
        its pages') on 2026-07-28, where every list carries one, else for ``tools_ttl_seconds``."""
        found: list[McpTool] = []
        cursor: str | None = None
        ttl_ms: list[int] = []
        stateless = client.protocol_version >= STATELESS_REVISION
        for _ in range(LIST_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            found += [listed_tool(self.config.name, tool, tasks=not stateless) for tool in page.tools]
            ttl_ms.append(page.ttl_ms)
            cursor = page.next_cursor
            if cursor is None:
                break
        self._listed_ttl = min(ttl_ms) / 1000 if stateless and ttl_ms else self._ttl
        self._tools, self._listed_at, self._stale = found, time.monotonic(), False


def _describe(exc: BaseException) -> str:
    """The innermost useful message of a (grouped) transport failure."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:300]
