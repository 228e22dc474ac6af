"""Discovery of provider plugins through the ``iris.providers`` entry-point group.

Lazy (nothing is imported until a provider is asked for, or :meth:`ProviderRegistry.start_loading`
is called) and failure-isolated (an import error, a factory that raises, a wrong SPI version: the
plugin is listed as failed with its error and every other provider keeps working). Tests pass their
own entry points or factories.

Importing a plugin can take seconds and hundreds of MiB (LiteLLM's import does), so a server never
loads one on its event loop, and loads at start-up only the ones it will use: it calls
:meth:`~ProviderRegistry.start_loading` with the providers of the catalogue's enabled models, which
imports and builds them on a thread of its own, and everything on the loop that needs a provider first
awaits :meth:`~ProviderRegistry.ready` for it (all of them, or the ones it names), which loads what is
not loaded yet on a thread and waits without blocking. Factories therefore run on such a thread: they
may import and read files, but must not need the event loop.

A thread alone does not keep the loop going while a large package imports: the import's allocations
trigger the garbage collector, whose full passes over the heap are single calls that hold the GIL
(``import litellm`` on a thread stalled the loop for most of a second that way: ADR 0020). So a loading thread
pauses automatic collection while it loads (:func:`collection_paused`) and then freezes what exists
(``gc.freeze``): the imported modules live as long as the process, and later full collections no longer
walk them either.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import traceback
from collections.abc import Collection, Iterable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager
from importlib.metadata import EntryPoint, entry_points

import msgspec

from iris.providers.errors import NoSuchProvider
from iris.providers.spec import (
    COMPATIBLE_SPEC_VERSIONS,
    SPEC_VERSION,
    Provider,
    ProviderContext,
    ProviderFactory,
)

log = logging.getLogger("iris.providers")

GROUP = "iris.providers"


_pauses = 0
_pauses_lock = threading.Lock()
_was_enabled = False


@contextmanager
def collection_paused() -> Iterator[None]:
    """Automatic garbage collection off while any caller is inside (it was on: back on after the last
    one), then everything that exists frozen out of later collections; see the module docstring."""
    global _pauses, _was_enabled
    with _pauses_lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pauses_lock:
            _pauses -= 1
            if _pauses == 0:
                gc.freeze()
                if _was_enabled:
                    gc.enable()


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
        self._submitting = threading.Lock()
        self._loads: dict[str, Future[None]] = {}  # by id: loaded or failed once set (on a thread)
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

    def start_loading(self, provider_ids: Iterable[str] | None = None) -> None:
        """Load these providers (every allowed one by default) on a thread of its own; :meth:`ready`
        waits for them. Ids that are not allowed or not installed are skipped (``get`` reports them)."""
        self._submit(self._pending(provider_ids))

    async def ready(self, provider_ids: Iterable[str] | None = None) -> None:
        """Wait, without blocking the event loop, until these providers (every allowed one by default)
        are loaded or failed, loading any that nobody started on a thread; afterwards ``get`` and
        ``load_all`` (for all) import nothing."""
        pending = self._pending(provider_ids)
        if pending:
            self._submit(pending)
            await asyncio.gather(*(asyncio.wrap_future(self._loads[i]) for i in pending))

    def _pending(self, provider_ids: Iterable[str] | None) -> list[str]:
        allowed = self.ids
        wanted = allowed if provider_ids is None else sorted(set(provider_ids) & set(allowed))
        return [i for i in wanted if i not in self._loaded and i not in self._failures]

    def _submit(self, provider_ids: list[str]) -> None:
        """One loading thread for the ids no thread is loading yet."""
        with self._submitting:
            fresh = [i for i in provider_ids if i not in self._loads]
            for provider_id in fresh:
                self._loads[provider_id] = Future()
        if fresh:
            threading.Thread(
                target=self._load_these, args=(fresh,), name="iris provider loading", daemon=True
            ).start()

    def _load_these(self, provider_ids: list[str]) -> None:
        with collection_paused():
            for provider_id in provider_ids:
                try:
                    with self._loading:
                        if provider_id not in self._loaded and provider_id not in self._failures:
                            self._load(provider_id)
                finally:
                    self._loads[provider_id].set_result(None)

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
