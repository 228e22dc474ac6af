"""Normalised variants cached in storage by (sha256, target): a long conversation encodes each image once."""

from __future__ import annotations

import io
import logging
from collections.abc import AsyncIterator

import anyio
from PIL import Image

from app.images import EXTENSION_BY_MIME
from app.media.normalise import Normalised, Target, normalise
from app.storage.base import ObjectNotFound, Storage, StorageError

log = logging.getLogger("iris.media")


def variant_path(sha256: str, target: Target) -> str:
    """Where the variant lives: outside ``agent-inputs/``, so no inbound URL can ever name it."""
    return f"derived/{sha256[:2]}/{sha256}/{target.key}"


async def read_all(storage: Storage, path: str) -> bytes:
    """A whole (small) object; images here are bounded by the upload limit."""
    return b"".join([chunk async for chunk in storage.open(path)])


class VariantCache:
    """Get-or-make normalised variants. ``hits``/``misses`` make the cache observable (tests, bench)."""

    def __init__(self, storage: Storage, limiter: anyio.CapacityLimiter) -> None:
        self.storage = storage
        self._limiter = limiter
        self.hits = 0
        self.misses = 0

    async def get(
        self, original_path: str, source_mime: str, sha256: str, target: Target
    ) -> tuple[str, Normalised]:
        """``(stored path, variant)`` for the original at ``original_path``."""
        base = variant_path(sha256, target)
        likely = [m for m in (source_mime, *target.mime_types) if m in target.mime_types]
        for mime in dict.fromkeys(likely):  # the source's own type first: usually the only read
            ext = EXTENSION_BY_MIME[mime]
            try:
                data = await read_all(self.storage, f"{base}.{ext}")
            except ObjectNotFound:
                continue
            self.hits += 1
            with Image.open(io.BytesIO(data)) as header:
                width, height = header.size
            return f"{base}.{ext}", Normalised(data=data, mime_type=mime, width=width, height=height)
        self.misses += 1
        original = await read_all(self.storage, original_path)
        variant = await anyio.to_thread.run_sync(lambda: normalise(original, target), limiter=self._limiter)
        path = f"{base}.{EXTENSION_BY_MIME[variant.mime_type]}"
        try:
            await self.storage.put(path, _once(variant.data), content_type=variant.mime_type)
        except StorageError as exc:
            # Another process may have stored the same variant first (identical bytes), or storage is
            # failing: either way this turn has its variant; only the caching is lost.
            log.info("variant %s not cached: %s", path, exc)
        return path, variant


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data
