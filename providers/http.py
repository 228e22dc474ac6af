"""HTTP plumbing shared by the built-in vendors: status → typed error, media encodings, key lookup."""

from __future__ import annotations

import base64
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio
import httpx
import msgspec

from providers.errors import ProviderError, ProviderErrorKind
from providers.messages import AudioPart, DocumentPart, ImagePart


class Base64Memo:
    """The base64 text of the byte strings encoded last, up to ``max_chars`` of text, by identity.

    A conversation sends its images again with every turn, and the core hands the same ``bytes`` object
    for an image while its variant is in memory (``app.media.variants``): encoding ~100 KB again was
    about 7 % of a run's instructions. Entries hold their ``bytes``, so an ``id`` is never reused while
    it is a key; texts under :data:`MEMO_MIN_BYTES` are not kept. Thread-safe (a lock around the dict)."""

    def __init__(self, max_chars: int) -> None:
        self._max_chars = max_chars
        self._recent: OrderedDict[int, tuple[bytes, str]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def encode(self, data: bytes) -> str:
        if len(data) < MEMO_MIN_BYTES:
            return base64.b64encode(data).decode("ascii")
        key = id(data)
        with self._lock:
            hit = self._recent.get(key)
            if hit is not None and hit[0] is data:
                self._recent.move_to_end(key)
                return hit[1]
        text = base64.b64encode(data).decode("ascii")
        if len(text) <= self._max_chars:
            with self._lock:
                if (stale := self._recent.pop(key, None)) is not None:
                    self._chars -= len(stale[1])
                self._recent[key] = (data, text)
                self._chars += len(text)
                while self._chars > self._max_chars:
                    _, (_, evicted) = self._recent.popitem(last=False)
                    self._chars -= len(evicted)
        return text


MEMO_MIN_BYTES = 16 * 1024
"""Smaller byte strings are encoded every time (cheap, and not worth an entry)."""
MEMO_CHARS = 16 * 1024 * 1024
"""The most base64 text :data:`BASE64` keeps (about 12 MiB of images)."""
BASE64 = Base64Memo(MEMO_CHARS)


def b64(part: ImagePart | DocumentPart | AudioPart) -> str:
    """The part's bytes as base64 text (raises if the core chose URL delivery for an image); the same
    ``bytes`` object sent again is not encoded again (:class:`Base64Memo`)."""
    if part.data is None:
        raise ValueError("inline delivery needs image data")
    return BASE64.encode(part.data)


def data_url(part: ImagePart | DocumentPart | AudioPart) -> str:
    """``data:<mime>;base64,…`` for vendors that take inline media as URLs."""
    return f"data:{part.mime_type};base64,{b64(part)}"


def json_body(body: dict[str, Any]) -> bytes:
    """Encode a request body in one pass, straight to bytes: image-heavy bodies are tens of MB, and
    ``json.dumps(...).encode()`` would hold a str and a bytes copy of it at once."""
    return msgspec.json.encode(body)


def chunk_json(text: str) -> Any:
    """A stream chunk's JSON (raises ``ValueError`` when it is not JSON): msgspec's decoder, about five
    times faster than ``json.loads`` on a chunk (2.7 vs 0.55 µs), and a run decodes one per token."""
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
