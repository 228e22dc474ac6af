"""Discovery of provider plugins through the ``iris.providers`` entry-point group.

Lazy (nothing is imported until a provider is asked for, or :meth:`ProviderRegistry.start_loading`
is called) and failure-isolated (an import error, a factory that raises, a wrong SPI version: the
plugin is listed as failed with its error and every other provider keeps working). Tests pass their
own entry points or factories.

Importing a plugin can take seconds (LiteLLM's import does), so a server never loads one on its event
loop: it calls :meth:`~ProviderRegistry.start_loading` at start-up, which imports and builds every
allowed provider on a thread of its own, and everything on the loop that needs a provider first awaits
:meth:`~ProviderRegistry.ready` (which waits without blocking). Factories therefore run on that
thread: they may import and read files, but must not need the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import traceback
from collections.abc import Collection, Iterable, Mapping
from concurrent.futures import Future
from importlib.metadata import EntryPoint, entry_points

import msgspec

from providers.errors import NoSuchProvider
from providers.spec import COMPATIBLE_SPEC_VERSIONS, SPEC_VERSION, Provider, ProviderContext, ProviderFactory

log = logging.getLogger("iris.providers")

GROUP = "iris.providers"


class ProviderFailure(msgspec.Struct, frozen=True, kw_only=True):
    """A plugin that could not be loaded, and why."""

    id: str
    source: str
    error: str


class ProviderRegistry:
    """Providers by id, loaded on first use."""

    def __init__(
        self,
        context: ProviderContext,
        *,
        entry_points_: Iterable[EntryPoint] | None = None,
        factories: Mapping[str, ProviderFactory] | None = None,
        allow: Collection[str] | None = None,
    ) -> None:
        """``entry_points_`` defaults to the installed ``iris.providers`` group; ``factories`` add (or, in
        tests, replace) providers without packaging; ``allow`` restricts which ids may load."""
        self._context = context
        self._allow = frozenset(allow) if allow is not None else None
        # Entry points and plain factories are kept apart: LiteLLM installs the importlib_metadata
        # backport, whose EntryPoint objects are not importlib.metadata.EntryPoint instances.
        self._entry_points: dict[str, EntryPoint] = {}
        self._factories: dict[str, ProviderFactory] = dict(factories or {})
        self._failures: dict[str, ProviderFailure] = {}
        self._loaded: dict[str, Provider] = {}
        self._loading = threading.Lock()  # the loading thread and synchronous callers never load twice
        self._all_loaded: Future[None] = Future()
        self._started = False
        found = entry_points(group=GROUP) if entry_points_ is None else entry_points_
        for ep in found:
            if ep.name in self._entry_points:
                self._failures[f"{ep.name}@{ep.value}"] = ProviderFailure(
                    id=ep.name,
                    source=ep.value,
                    error=f"duplicate provider id {ep.name!r}; the first one wins",
                )
                continue
            if ep.name not in self._factories:
                self._entry_points[ep.name] = ep

    @property
    def context(self) -> ProviderContext:
        """What every factory is given."""
        return self._context

    @property
    def ids(self) -> list[str]:
        """Every provider id that may load (allowed), loaded or not."""
        known = self._entry_points.keys() | self._factories.keys()
        return sorted(i for i in known if self._allow is None or i in self._allow)

    def start_loading(self) -> None:
        """Load every allowed provider on a thread of its own, once; :meth:`ready` waits for it."""
        if self._started:
            return
        self._started = True
        threading.Thread(target=self._load_everything, name="iris provider loading", daemon=True).start()

    async def ready(self) -> None:
        """Wait, without blocking the event loop, until every allowed provider is loaded or failed
        (starting the loading thread if nobody has); afterwards nothing here imports anything."""
        self.start_loading()
        if not self._all_loaded.done():
            await asyncio.wrap_future(self._all_loaded)

    def _load_everything(self) -> None:
        try:
            self.load_all()
        finally:
            self._all_loaded.set_result(None)

    def get(self, provider_id: str) -> Provider:
        """The provider, loading it now if needed; :class:`NoSuchProvider` if absent, disallowed or broken.

        Loading imports the plugin: on an event loop, await :meth:`ready` first."""
        if provider_id not in self._loaded and provider_id in self.ids and provider_id not in self._failures:
            with self._loading:
                if provider_id not in self._loaded and provider_id not in self._failures:
                    self._load(provider_id)
        if provider_id in self._loaded:
            return self._loaded[provider_id]
        raise NoSuchProvider(provider_id, sorted(self._loaded) or self.ids)

    def load_all(self) -> tuple[dict[str, Provider], list[ProviderFailure]]:
        """Load every allowed provider; the loaded ones and the failures (``GET /api/providers``).

        Loading imports the plugins: on an event loop, await :meth:`ready` first."""
        with self._loading:
            for provider_id in self.ids:
                if provider_id not in self._loaded and provider_id not in self._failures:
                    self._load(provider_id)
        return dict(sorted(self._loaded.items())), sorted(self._failures.values(), key=lambda f: f.id)

    def _load(self, provider_id: str) -> None:
        entry_point = self._entry_points.get(provider_id)
        where = entry_point.value if entry_point is not None else repr(self._factories[provider_id])
        try:
            factory: ProviderFactory = (
                entry_point.load() if entry_point is not None else self._factories[provider_id]
            )
            provider = factory(self._context)
            if not isinstance(provider, Provider):
                raise TypeError(f"{where} did not return a Provider (got {type(provider).__name__})")
            if provider.spec_version not in COMPATIBLE_SPEC_VERSIONS:
                raise TypeError(f"speaks SPI version {provider.spec_version!r}, Iris speaks {SPEC_VERSION!r}")
            if provider.id != provider_id:
                raise TypeError(f"registered as {provider_id!r} but calls itself {provider.id!r}")
        except Exception as exc:  # a broken plugin must never break the app
            log.warning("provider %s (%s) failed to load: %s", provider_id, where, exc)
            log.debug("".join(traceback.format_exception(exc)))
            self._failures[provider_id] = ProviderFailure(
                id=provider_id, source=where, error=f"{type(exc).__name__}: {exc}"
            )
            return
        self._loaded[provider_id] = provider
