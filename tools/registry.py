"""Discovery of tool plugins through the ``iris.tools`` entry-point group.

Lazy (entry points are imported the first time a tool is asked for or listed) and failure-isolated
(an import error, a factory that raises, a wrong SPI version or a bad definition: the plugin is listed
as failed with its error and every other tool keeps working), like :mod:`iris.providers.registry`.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterable, Mapping
from importlib.metadata import EntryPoint, entry_points

import msgspec

from iris.tools.spec import TOOL_NAME_PATTERN, TOOL_SPEC_VERSION, Tool, ToolFactory, ToolPluginContext

log = logging.getLogger("iris.tools")

GROUP = "iris.tools"


class ToolFailure(msgspec.Struct, frozen=True, kw_only=True):
    """A plugin that could not be loaded, and why."""

    name: str
    source: str
    error: str


class ToolRegistry:
    """Tools by name, loaded on first use."""

    def __init__(
        self,
        context: ToolPluginContext,
        *,
        entry_points_: Iterable[EntryPoint] | None = None,
        factories: Mapping[str, ToolFactory] | None = None,
    ) -> None:
        """``entry_points_`` defaults to the installed ``iris.tools`` group; ``factories`` add (or, in
        tests, replace) tools without packaging."""
        self._context = context
        self._entry_points: dict[str, EntryPoint] = {}
        self._factories: dict[str, ToolFactory] = dict(factories or {})
        self._failures: dict[str, ToolFailure] = {}
        self._loaded: dict[str, Tool] = {}
        found = entry_points(group=GROUP) if entry_points_ is None else entry_points_
        for ep in found:
            if ep.name in self._entry_points:
                self._failures[f"{ep.name}@{ep.value}"] = ToolFailure(
                    name=ep.name,
                    source=ep.value,
                    error=f"duplicate tool name {ep.name!r}; the first one wins",
                )
            elif ep.name not in self._factories:
                self._entry_points[ep.name] = ep

    @property
    def names(self) -> list[str]:
        """Every tool name that may load, loaded or not."""
        return sorted(self._entry_points.keys() | self._factories.keys())

    def get(self, name: str) -> Tool | None:
        """The tool, loading it now if needed; ``None`` if absent or broken."""
        if name not in self._loaded and name in self.names and name not in self._failures:
            self._load(name)
        return self._loaded.get(name)

    def source(self, name: str) -> str:
        """Where the tool comes from: ``builtin`` (this package) or ``plugin:{module}``."""
        entry_point = self._entry_points.get(name)
        module = entry_point.value.partition(":")[0] if entry_point is not None else "factory"
        return "builtin" if module == "iris.tools.builtin" else f"plugin:{module}"

    def load_all(self) -> tuple[dict[str, Tool], list[ToolFailure]]:
        """Load every tool; the loaded ones and the failures (``GET /api/tools``)."""
        for name in self.names:
            self.get(name)
        return dict(sorted(self._loaded.items())), sorted(self._failures.values(), key=lambda f: f.name)

    def _load(self, name: str) -> None:
        entry_point = self._entry_points.get(name)
        where = entry_point.value if entry_point is not None else repr(self._factories[name])
        try:
            factory: ToolFactory = entry_point.load() if entry_point is not None else self._factories[name]
            tool = factory(self._context)
            if not isinstance(tool, Tool):
                raise TypeError(f"{where} did not return a Tool (got {type(tool).__name__})")
            if tool.spec_version != TOOL_SPEC_VERSION:
                raise TypeError(
                    f"speaks tool SPI version {tool.spec_version!r}, Iris speaks {TOOL_SPEC_VERSION!r}"
                )
            if tool.definition.name != name:
                raise TypeError(f"registered as {name!r} but calls itself {tool.definition.name!r}")
            if not TOOL_NAME_PATTERN.match(name) or "__" in name:
                raise ValueError(f"{name!r} is not a tool name (letters, digits, _ and -, no '__')")
            if tool.definition.parameters.get("type") != "object":
                raise ValueError("its parameters must be a JSON Schema of type 'object'")
        except Exception as exc:  # a broken plugin must never break the app
            log.warning("tool %s (%s) failed to load: %s", name, where, exc)
            log.debug("".join(traceback.format_exception(exc)))
            self._failures[name] = ToolFailure(name=name, source=where, error=f"{type(exc).__name__}: {exc}")
            return
        self._loaded[name] = tool
