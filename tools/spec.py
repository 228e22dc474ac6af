"""The tool SPI: what a tool plugin implements and what it is given.

A plugin package declares an entry point in the ``iris.tools`` group whose name is the tool's name
and whose value is a *factory*: a callable taking a :class:`ToolPluginContext` and returning a
:class:`Tool`. The built-in tools register the same way (see ``pyproject.toml``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

import msgspec

from iris.tools.content import ToolResult

TOOL_SPEC_VERSION = "1"
"""Bumped on any incompatible change to this module or ``content``."""

TOOL_NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
"""What vendors accept as a function name (the strictest of them), and what ``{server}__{tool}``
names of MCP tools fit in."""

Approval = Literal["always", "never", "destructive"]
"""When a call waits for the user: ``always``, ``never``, or ``destructive`` (unless the tool's hints
say it is read-only, or when they say it is destructive; no hints: ask)."""


class ToolFailed(Exception):
    """The tool could not answer; the message is shown to the model and stored in ``error``."""


class ToolHints(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """MCP's tool annotations, as hints: ``None`` when the tool does not say."""

    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None


class ToolDefinition(msgspec.Struct, frozen=True, kw_only=True):
    """What the model is offered (name, description, JSON Schema of the arguments) and how the core
    runs it: ``approval`` (see :data:`Approval`), ``hints``, and ``timeout_seconds`` per call."""

    name: str
    description: str
    parameters: dict[str, Any]
    approval: Approval = "destructive"
    hints: ToolHints = msgspec.field(default_factory=ToolHints)
    timeout_seconds: float = 30.0


def needs_approval(approval: Approval, hints: ToolHints) -> bool:
    """The admin's (or tool author's) rule first; ``destructive`` reads the hints: a tool that says
    nothing, or does not say it is read-only, asks; so does one that says it is destructive."""
    if approval != "destructive":
        return approval == "always"
    return hints.destructive is True or hints.read_only is not True


class ProgressHook(Protocol):
    """Where a running call reports how far it is: ``progress`` so far, out of ``total`` when known, with
    an optional ``message`` (MCP's ``notifications/progress``, which MCP tools are relayed through)."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


LogHook = Callable[[str, str, str | None], None]
"""Where a running call's log lines go: ``(level, message, logger)``, levels as syslog's (``info``,
``warning``, …). MCP tools' ``notifications/message`` arrive here."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What one call may use: whose thread it runs in, the thread's images (canonical stored parts,
    oldest first), the clock, ``delete_upload`` (removes one of this thread's uploads), and the
    optional hooks the core sets for each call: ``progress`` (see :meth:`report_progress`) and ``log``
    (a log line shown with the progress). Both may be ``None`` (an older core, a test): call them
    through :meth:`report_progress`, or check first."""

    user_id: str
    thread_id: str
    images: Sequence[Mapping[str, Any]]
    now: Callable[[], dt.datetime]
    delete_upload: Callable[[str], Awaitable[None]]
    progress: ProgressHook | None = None
    log: LogHook | None = None

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell the user how far this call is (shown while it runs); a no-op where nobody listens.
        Cheap to call often: the core sends at most a few updates a second, the latest ones."""
        if self.progress is not None:
            await self.progress(progress, total, message)


@runtime_checkable
class Tool(Protocol):
    """A tool. ``call`` gets the model's arguments as a JSON object; it returns a :class:`ToolResult`
    or raises :class:`ToolFailed` (any other exception is reported as a failure too). The core
    bounds it by ``definition.timeout_seconds``."""

    definition: ToolDefinition
    spec_version: str

    async def call(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult: ...


class ToolPluginContext(msgspec.Struct, frozen=True, kw_only=True):
    """What a factory gets: the environment to read its settings or keys from (no ``IRIS_*``)."""

    environ: Mapping[str, str]


ToolFactory = Callable[[ToolPluginContext], Tool]

A = TypeVar("A", bound=msgspec.Struct)


class StructTool(Generic[A]):
    """A tool whose arguments decode strictly into a msgspec struct before ``run`` sees them."""

    spec_version = TOOL_SPEC_VERSION

    def __init__(
        self,
        definition: ToolDefinition,
        arguments: type[A],
        run: Callable[[A, ToolContext], Awaitable[ToolResult]],
    ) -> None:
        self.definition = definition
        self._arguments = arguments
        self._run = run

    async def call(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        try:
            args = msgspec.convert(dict(arguments), type=self._arguments)
        except msgspec.ValidationError as exc:
            raise ToolFailed(f"invalid arguments: {exc}") from exc
        return await self._run(args, context)
