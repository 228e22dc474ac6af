"""Before any vendor call: check capabilities, normalise images, decide delivery; retry inline once
when the vendor could not download a URL.

The same code serves every provider, so no provider re-implements image handling.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence

import msgspec

from iris.app.errors import Unprocessable
from iris.app.media.normalise import CannotFit, Normalised, Target, measured
from iris.app.media.variants import VariantCache
from iris.providers import (
    Capabilities,
    ImagePart,
    Message,
    ModelSpec,
    Provider,
    ProviderError,
    ProviderEvent,
    RequestOptions,
)

log = logging.getLogger("iris.media")

CONVERTIBLE = ("image/png", "image/jpeg", "image/webp")
FRAMING_BYTES = 64 * 1024
"""What a request body holds besides its text and images (JSON framing, tool definitions, options)."""
IMAGE_FLOOR_BYTES = 32 * 1024
"""The base64 bytes below which an image is not worth sending: a request that cannot give every
image this much is refused rather than sent as thumbnails."""


class ImageRef(msgspec.Struct, frozen=True, kw_only=True):
    """A stored original, as a canonical message part names it; or, with ``data``, an original that was
    sent inline and is never stored (its ``path`` is empty)."""

    path: str
    mime_type: str
    sha256: str
    name: str = ""
    data: bytes | None = None


def check_images(caps: Capabilities, mime_types: Sequence[str], *, model_ref: str) -> None:
    """422 before any I/O when the model cannot take these images (all images of the request)."""
    if not mime_types:
        return
    if not caps.vision:
        raise Unprocessable(
            f"{model_ref} cannot see images; pick a vision model or remove the images.",
            code="model_lacks_vision",
        )
    if len(mime_types) > caps.max_images:
        raise Unprocessable(
            f"{model_ref} takes at most {caps.max_images} images per request, not {len(mime_types)}.",
            code="too_many_images",
        )
    if not any(m in caps.image_mime_types for m in CONVERTIBLE):
        raise Unprocessable(
            f"{model_ref} accepts no image type Iris can convert to ({', '.join(caps.image_mime_types)}).",
            code="image_type_unsupported",
        )


def delivers_by_url(caps: Capabilities, *, storage_publicly_reachable: bool) -> bool:
    """Whether images reach this model as URLs (else inline, and within its request limit)."""
    return caps.url_fetch == "public_https" and storage_publicly_reachable


def image_budget(caps: Capabilities, reserved_bytes: int) -> int | None:
    """The base64 bytes a request's inline images may take together, or ``None`` without a limit."""
    if not caps.max_request_bytes:
        return None
    return caps.max_request_bytes - reserved_bytes - FRAMING_BYTES


def check_request_size(caps: Capabilities, reserved_bytes: int, image_count: int, *, model_ref: str) -> None:
    """422 ``request_too_large`` before any I/O when the request cannot fit the vendor's limit even with
    every inline image downscaled (the text, documents and audio alone, or too little room per image;
    ``image_count`` 0 when images go by URL)."""
    budget = image_budget(caps, reserved_bytes)
    if budget is None or budget >= image_count * IMAGE_FLOOR_BYTES:
        return
    raise Unprocessable(
        f"This request would be larger than the {caps.max_request_bytes} bytes {model_ref} accepts"
        f" ({reserved_bytes} bytes of text, documents and audio, and {image_count} inline images):"
        " shorten it or send fewer attachments.",
        code="request_too_large",
    )


def target_for(caps: Capabilities) -> Target:
    """The normalisation target a model's capabilities describe."""
    return Target(
        mime_types=tuple(m for m in caps.image_mime_types if m in CONVERTIBLE),
        max_bytes=caps.max_image_bytes,
        measured_on=caps.image_bytes_measured_on,
        recommended_long_edge_px=caps.recommended_long_edge_px,
        max_edge_px=caps.max_image_edge_px,
    )


class ImageDelivery:
    """Makes provider-ready image parts from stored originals."""

    def __init__(
        self, cache: VariantCache, *, storage_publicly_reachable: bool, url_ttl_seconds: int
    ) -> None:
        self.cache = cache
        self._reachable = storage_publicly_reachable
        self._ttl = url_ttl_seconds

    def by_url(self, caps: Capabilities) -> bool:
        """URLs only where the vendor fetches them *and* the deployment says storage is reachable."""
        return delivers_by_url(caps, storage_publicly_reachable=self._reachable)

    async def parts(
        self, refs: Sequence[ImageRef], caps: Capabilities, *, by_url: bool, budget: int | None = None
    ) -> list[ImagePart]:
        """One normalised part per ref, inline or as fresh signed URLs (signed in one batch; a request
        with an image that was never stored sends them all inline). Inline parts fit ``budget``
        (base64 bytes for all of them, from :func:`image_budget`) together: when the model's own
        targets do not, images above an equal share are made again to that share."""
        target = target_for(caps)
        by_url = by_url and all(r.data is None for r in refs)
        variants = [
            await self.cache.get(r.path, r.mime_type, r.sha256, target, original=r.data) for r in refs
        ]
        if not by_url and budget is not None and refs:
            variants = await self._within(refs, variants, target, budget)
        if not by_url:
            return [
                ImagePart(mime_type=v.mime_type, width=v.width, height=v.height, data=v.data, name=r.name)
                for r, (_, v) in zip(refs, variants, strict=True)
            ]
        signed = await self.cache.storage.sign([path for path, _ in variants], self._ttl)
        return [
            ImagePart(mime_type=v.mime_type, width=v.width, height=v.height, url=s.url, name=r.name)
            for r, (_, v), s in zip(refs, variants, signed, strict=True)
        ]

    async def _within(
        self,
        refs: Sequence[ImageRef],
        variants: list[tuple[str, Normalised]],
        target: Target,
        budget: int,
    ) -> list[tuple[str, Normalised]]:
        if sum(measured(len(v.data), "base64") for _, v in variants) <= budget:
            return variants
        share = msgspec.structs.replace(target, max_bytes=budget // len(refs), measured_on="base64")
        try:
            return [
                (path, v)
                if measured(len(v.data), "base64") <= share.max_bytes
                else await self.cache.get(r.path, r.mime_type, r.sha256, share, original=r.data)
                for r, (path, v) in zip(refs, variants, strict=True)
            ]
        except CannotFit as exc:
            raise Unprocessable(
                f"The images do not fit the model's {budget}-byte request budget.", code="request_too_large"
            ) from exc


async def stream_with_inline_fallback(
    provider: Provider,
    model: ModelSpec,
    options: RequestOptions,
    build_messages: Callable[[bool], Awaitable[Sequence[Message]]],
    *,
    by_url: bool,
) -> AsyncGenerator[ProviderEvent, None]:
    """Stream; if the vendor says it could not download an image URL before anything streamed, rebuild
    the messages with inline images and try once more."""
    started = False
    try:
        async for event in provider.stream(await build_messages(by_url), model, options):
            started = True
            yield event
    except ProviderError as exc:
        if exc.kind != "could_not_fetch_image" or started or not by_url:
            raise
        log.warning("%s could not download an image URL; retrying with inline images", provider.id)
        async for event in provider.stream(await build_messages(False), model, options):
            yield event
