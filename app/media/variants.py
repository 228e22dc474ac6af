"""Normalised variants cached in storage by (sha256, target): a long conversation encodes each image once."""

from __future__ import annotations

import io
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator

import anyio
from PIL import Image

from iris.app.media.normalise import Normalised, Target, normalise
from iris.app.mime import EXTENSION_BY_MIME
from iris.app.storage.base import ObjectNotFound, Storage, StorageError

log = logging.getLogger("iris.media")


def variant_path(sha256: str, target: Target) -> str:
    """Where the variant lives: outside ``agent-inputs/``, so no inbound URL can ever name it."""
    return f"derived/{sha256[:2]}/{sha256}/{target.key}"


MEMORY_BYTES = 16 * 1024 * 1024
"""The most variant bytes kept in memory: the images a process's recent runs sent (a conversation sends
its images again every turn), so those turns read neither storage nor an image header."""


class VariantCache:
    """Get-or-make normalised variants: from memory (the most recently used, up to ``memory_bytes``),
    else from storage, else made once and stored. ``hits``/``misses`` make it observable (tests, bench)."""

    def __init__(
        self, storage: Storage, limiter: anyio.CapacityLimiter, *, memory_bytes: int = MEMORY_BYTES
    ) -> None:
        self.storage = storage
        self._limiter = limiter
        self.hits = 0
        self.misses = 0
        self._memory_bytes = memory_bytes
        self._recent: OrderedDict[str, tuple[str, Normalised]] = OrderedDict()
        self._recent_bytes = 0

    async def get(
        self,
        original_path: str,
        source_mime: str,
        sha256: str,
        target: Target,
        *,
        original: bytes | None = None,
    ) -> tuple[str, Normalised]:
        """``(stored path, variant)`` for the original at ``original_path``; or, given the ``original``'s
        bytes (an image sent inline, never stored), its variant made from them, remembered in memory
        only (OpenAI clients send the same image again with every turn) under a key stored variants
        never use, since its path names nothing in storage."""
        base = variant_path(sha256, target)
        key = base if original is None else f"inline:{base}"
        if (recent := self._recent.get(key)) is not None:  # variants never change: no need to ask storage
            self._recent.move_to_end(key)
            self.hits += 1
            return recent
        if original is not None:
            self.misses += 1
            source = original
            variant = await anyio.to_thread.run_sync(lambda: normalise(source, target), limiter=self._limiter)
            return self._remember(key, (base, variant))  # a request's own bytes: nothing is stored
        found = await self._stored(base, source_mime, target)
        if found is not None:
            self.hits += 1
            return self._remember(base, found)
        self.misses += 1
        stored = await self.storage.read(original_path)
        variant = await anyio.to_thread.run_sync(lambda: normalise(stored, target), limiter=self._limiter)
        path = f"{base}.{EXTENSION_BY_MIME[variant.mime_type]}"
        try:
            await self.storage.put(path, _once(variant.data), content_type=variant.mime_type)
        except StorageError as exc:
            # Another process may have stored the same variant first (identical bytes), or storage is
            # failing: either way this turn has its variant; only the caching is lost.
            log.info("variant %s not cached: %s", path, exc)
        return self._remember(base, (path, variant))

    async def _stored(self, base: str, source_mime: str, target: Target) -> tuple[str, Normalised] | None:
        likely = [m for m in (source_mime, *target.mime_types) if m in target.mime_types]
        for mime in dict.fromkeys(likely):  # the source's own type first: usually the only read
            ext = EXTENSION_BY_MIME[mime]
            try:
                data = await self.storage.read(f"{base}.{ext}")
            except ObjectNotFound:
                continue
            with Image.open(io.BytesIO(data)) as header:
                width, height = header.size
            return f"{base}.{ext}", Normalised(data=data, mime_type=mime, width=width, height=height)
        return None

    def _remember(self, base: str, entry: tuple[str, Normalised]) -> tuple[str, Normalised]:
        size = len(entry[1].data)
        if size <= self._memory_bytes:
            if (replaced := self._recent.pop(base, None)) is not None:  # two turns made it at once
                self._recent_bytes -= len(replaced[1].data)
            self._recent[base] = entry
            self._recent_bytes += size
            while self._recent_bytes > self._memory_bytes:
                _, (_, evicted) = self._recent.popitem(last=False)
                self._recent_bytes -= len(evicted.data)
        return entry


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data
