"""An MCP server's configuration as a connection needs it, and ``${VAR}`` expansion.

Header and environment values are stored as written; ``${VAR}`` (or ``${VAR:-default}``) is replaced
from the process environment only when the server is connected, so a rotated token needs a
reconnect, not an edit, and no secret is ever stored or shown expanded.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TextIO

from iris.app.mcp.oauth.server_auth import ServerAuth
from iris.app.persistence.models import McpServer
from iris.tools import Approval

_VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}")

Transport = Literal["stdio", "http"]


class MissingVariable(ValueError):
    """A ``${VAR}`` names a variable that is not set (and has no default); ``field`` is the setting that
    names it (``headers.Authorization``, ``env.API_KEY``)."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


def expand(value: str, environ: Mapping[str, str], *, kind: Literal["headers", "env"], key: str) -> str:
    """``value`` (the ``key`` of the server's ``kind``) with every ``${VAR}`` replaced from ``environ``."""

    def replace(match: re.Match[str]) -> str:
        name = match["name"]
        if name in environ:
            return environ[name]
        if match["default"] is not None:
            return match["default"]
        where = f"header {key}" if kind == "headers" else f"env {key}"
        raise MissingVariable(
            f"{where} names ${{{name}}}, which is not set on the server", field=f"{kind}.{key}"
        )

    return _VARIABLE.sub(replace, value)


def names_variable(value: str) -> bool:
    """Whether the value takes anything from the environment."""
    return _VARIABLE.search(value) is not None


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One server's settings, detached from the database row; ``version`` changes on every edit (a
    connection made for another version is replaced)."""

    name: str
    transport: Transport
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    approval: Approval = "destructive"
    tool_approval: Mapping[str, Approval] = field(default_factory=dict)
    connect_timeout_seconds: float = 10.0
    call_timeout_seconds: float = 60.0
    version: str = ""
    oauth: ServerAuth | None = None
    """How Iris authorizes at the server (an ``http`` one); ``None``: it needs no sign-in."""

    @classmethod
    def from_row(cls, row: McpServer) -> ServerConfig:
        updated: dt.datetime | None = row.updated_at
        return cls(
            name=row.name,
            transport="http" if row.transport == "http" else "stdio",
            url=row.url,
            headers=dict(row.headers or {}),
            command=row.command,
            args=tuple(row.args or ()),
            env=dict(row.env or {}),
            approval=_approval(row.approval),
            tool_approval={k: _approval(v) for k, v in (row.tool_approval or {}).items()},
            connect_timeout_seconds=row.connect_timeout_seconds,
            call_timeout_seconds=row.call_timeout_seconds,
            version=f"{row.id}:{updated.isoformat() if updated else ''}",
            oauth=ServerAuth.from_json(row.oauth) if row.transport == "http" else None,
        )

    def approval_for(self, tool: str) -> Approval:
        """The rule for one of its tools: the per-tool one, else the server's."""
        return self.tool_approval.get(tool, self.approval)

    def expanded_headers(self, environ: Mapping[str, str]) -> dict[str, str]:
        return {k: expand(v, environ, kind="headers", key=k) for k, v in self.headers.items()}

    def expanded_env(self, environ: Mapping[str, str]) -> dict[str, str]:
        return {k: expand(v, environ, kind="env", key=k) for k, v in self.env.items()}

    def check_variables(self, environ: Mapping[str, str]) -> None:
        """:class:`MissingVariable` for the first ``${VAR}`` its transport would need that ``environ``
        lacks: what a connection would fail on, found when the server is saved."""
        if self.transport == "http":
            self.expanded_headers(environ)
        else:
            self.expanded_env(environ)


def _approval(value: str) -> Approval:
    return value if value in ("always", "never") else "destructive"  # type: ignore[return-value]


def stderr_log(log_dir: Path | None, server: str, stack: AsyncExitStack) -> TextIO:
    """Where a stdio server's stderr goes: a log file per server under ``log_dir``, else nowhere; the
    handle is closed by ``stack``."""
    if log_dir is None:
        handle = open(os.devnull, "w")  # noqa: SIM115 -- closed by the stack
    else:
        log_dir.mkdir(parents=True, exist_ok=True)
        handle = (log_dir / f"{server}.stderr.log").open("a")
    stack.callback(handle.close)
    return handle
