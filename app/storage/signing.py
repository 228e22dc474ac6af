"""Fresh signed URLs for stored image parts. History never stores or returns a stale URL."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from app.storage.base import SignedUrl, Storage


async def sign_image_parts(
    storage: Storage, parts: Iterable[Mapping[str, Any]], *, ttl_seconds: int
) -> dict[str, SignedUrl]:
    """Sign every distinct image path in ``parts`` with one storage call; keyed by path.

    ``parts`` are canonical stored parts (``{"type": "image", "bucket", "path", …}``); parts of
    other types, or in another bucket than the storage's, are skipped.
    """
    paths = list(
        dict.fromkeys(
            str(part["path"])
            for part in parts
            if part.get("type") == "image" and part.get("bucket") == storage.bucket and part.get("path")
        )
    )
    if not paths:
        return {}
    return {signed.path: signed for signed in await storage.sign(paths, ttl_seconds)}
