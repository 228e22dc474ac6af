"""Fresh signed URLs for stored parts (images, documents and audio users sent, a PDF's thumbnail, and
the audio and files tools return). History never
stores or returns a stale URL."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from iris.app.storage.base import SignedUrl, Storage

STORED_TYPES = frozenset({"image", "document", "audio", "resource", "resource_link"})
"""Canonical part types whose bytes live in the object store (``path``) rather than in the part (a
``resource_link`` once it has been read)."""


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
            if part.get("type") in STORED_TYPES and part.get("bucket") == storage.bucket and part.get("path")
        )
    )
    if not paths:
        return {}
    return {signed.path: signed for signed in await storage.sign(paths, ttl_seconds)}


def with_urls(parts: Sequence[Mapping[str, Any]], signed: Mapping[str, SignedUrl]) -> list[dict[str, Any]]:
    """Stored parts as a reader gets them: each stored one with its fresh ``url`` and ``expiresAt``."""
    out: list[dict[str, Any]] = []
    for part in parts:
        url = signed.get(str(part.get("path", "")))
        out.append(
            {**part, "url": url.url, "expiresAt": msgspec.to_builtins(url.expires_at)}
            if url is not None
            else dict(part)
        )
    return out


def without_urls(parts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The canonical form again: what an event carried, minus its signed URLs (before it is stored)."""
    return [{k: v for k, v in part.items() if k not in ("url", "expiresAt")} for part in parts]
