"""HTTP plumbing shared by the built-in vendors: status → typed error, media encodings, key lookup."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio
import httpx
import msgspec

from iris.providers.errors import ProviderError, ProviderErrorKind
from iris.providers.media_text import MEDIA, encode_body
from iris.providers.messages import AudioPart, DocumentPart, ImagePart


def b64(part: ImagePart | DocumentPart | AudioPart) -> str:
    """The part's bytes as base64 text (raises if the core chose URL delivery for an image); made once
    for the same ``bytes`` sent again (:mod:`iris.providers.media_text`)."""
    if part.data is None:
        raise ValueError("inline delivery needs image data")
    return MEDIA.base64(part.data)


def data_url(part: ImagePart | DocumentPart | AudioPart) -> str:
    """``data:<mime>;base64,…`` for vendors that take inline media as URLs (made once, as :func:`b64`)."""
    if part.data is None:
        raise ValueError("inline delivery needs image data")
    return MEDIA.data_url(part.mime_type, part.data)


def json_body(body: dict[str, Any]) -> bytes:
    """Encode a request body in one pass, straight to bytes: image-heavy bodies are tens of MB, and
    ``json.dumps(...).encode()`` would hold a str and a bytes copy of it at once. Media text made by
    :func:`b64` and :func:`data_url` goes in as the JSON it was encoded to once."""
    return encode_body(body)


def chunk_json(text: str) -> Any:
    """A stream chunk's JSON (raises ``ValueError`` when it is not JSON): msgspec's decoder, several
    times faster than ``json.loads`` on a chunk, and a run decodes one per token (ADR 0068)."""
    return msgspec.json.decode(text)


JSON_HEADERS = {"content-type": "application/json"}


def require_key(environ: Mapping[str, str], name: str, provider: str) -> str:
    """The API key from the environment, or an ``auth`` error that names the variable (not its value)."""
    key = environ.get(name, "")
    if not key:
        raise ProviderError("auth", f"set {name} to use this provider", provider=provider)
    return key


def error_for_status(
    provider: str,
    response: httpx.Response,
    body: str,
    *,
    could_not_fetch: Callable[[int, str], bool] = lambda _status, _body: False,
) -> ProviderError:
    """The typed error for a non-2xx vendor answer. ``body`` is included, cut short (vendors echo no keys)."""
    status = response.status_code
    kind: ProviderErrorKind
    if could_not_fetch(status, body):
        kind = "could_not_fetch_image"
    elif status in (401, 403):
        kind = "auth"
    elif status == 429:
        kind = "rate_limit"
    elif status in (400, 404, 409, 413, 422):
        kind = "bad_request"
    elif status >= 500:
        kind = "unavailable"
    else:
        kind = "other"
    retry_after = None
    if header := response.headers.get("retry-after"):
        try:
            retry_after = float(header)
        except ValueError:
            retry_after = None
    return ProviderError(
        kind, f"HTTP {status}: {body[:500]}", provider=provider, status=status, retry_after=retry_after
    )


DRAIN_SECONDS = 2.0
"""How long a vendor may take to end its body after its own end-of-answer marker."""


async def drain(rest: AsyncIterator[object]) -> None:
    """Read whatever follows a stream's end-of-answer marker (normally just the end of the chunked body).

    httpx puts a connection back in its pool only once the response body was read to its end; leaving
    ``async with client.stream(...)`` at ``data: [DONE]`` instead closes it, and the next request pays a
    new TCP (and TLS) handshake. The answer is complete by then, so a vendor that keeps talking or cuts
    the connection here costs only that connection, never the answer.
    """
    with anyio.move_on_after(DRAIN_SECONDS):
        try:
            async for _ in rest:
                pass
        except httpx.HTTPError:
            return


def transport_error(provider: str, exc: httpx.HTTPError) -> ProviderError:
    """A connection-level failure (refused, reset, timeout, stream cut short)."""
    return ProviderError("unavailable", f"{type(exc).__name__} talking to the vendor", provider=provider)
