"""The one HTTP client every vendor request goes through, and the aiohttp transport under it.

Providers get an :class:`httpx.AsyncClient` (the plugin SPI's ``ProviderContext.http``); what moves the
bytes underneath is aiohttp's HTTP/1.1 client by default, because a run's vendor stream costs this
process less CPU on it than on httpx's own transport (ADR 0069). No vendor Iris calls needs HTTP/2; a
deployment whose vendor or gateway does sets ``IRIS_VENDOR_HTTP2`` and gets httpx's transport, offering
HTTP/2 by ALPN.

Either way each vendor origin keeps its own warm connections: a connection goes back to the pool only
once a provider read its body to the end (:func:`iris.providers.http.drain`), and one cut short is closed,
never reused. The connection count is not capped (a vendor's rate limits are the real cap); idle ones
stay warm for 30 s. No read timeout: waiting on a vendor is bounded by the run deadlines
(app/runs/intake/deadlines.py), which apply to every provider, plugins included, with their own codes.
Proxies and CA bundles come from the environment as httpx would take them (``HTTPS_PROXY``,
``NO_PROXY``, ``SSL_CERT_FILE``).
"""

from __future__ import annotations

import contextlib
import urllib.request
from collections.abc import AsyncIterator, Iterator

import aiohttp
import httpx

KEEPALIVE_SECONDS = 30
TIMEOUT = httpx.Timeout(connect=10, read=None, write=60, pool=10)
"""The vendor client's timeouts: no read timeout (the run deadlines bound the waits)."""


def vendor_http_client(*, http2: bool = False) -> httpx.AsyncClient:
    """The vendor client, built once per app (and per CLI command that talks to vendors)."""
    if http2:
        return httpx.AsyncClient(
            http2=True,
            timeout=TIMEOUT,
            limits=httpx.Limits(
                max_connections=None, max_keepalive_connections=64, keepalive_expiry=KEEPALIVE_SECONDS
            ),
        )
    return httpx.AsyncClient(timeout=TIMEOUT, transport=AiohttpTransport())


class AiohttpTransport(httpx.AsyncBaseTransport):
    """httpx's transport interface over one :class:`aiohttp.ClientSession` (made on first use, in the
    loop that uses it). Its failures come out as httpx's own exceptions, which the providers map
    (connection refused: ``ConnectError``; a body cut short: ``RemoteProtocolError``…)."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._proxies = urllib.request.getproxies_environment()  # HTTP(S)_PROXY, NO_PROXY…, once

    def _proxy_for(self, url: httpx.URL) -> str | None:
        bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]  # not in typeshed
        if not self._proxies or bypass(url.host, self._proxies):
            return None
        return self._proxies.get(url.scheme) or self._proxies.get("all")

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=0,
                keepalive_timeout=KEEPALIVE_SECONDS,
                ssl=httpx.create_ssl_context(),  # the same trust store as httpx's (SSL_CERT_FILE…)
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                # Not trust_env: it reads the environment (and ~/.netrc) again on every request
                # (ADR 0069); the proxies are read once, as httpx reads them (``_proxy_for``).
                auto_decompress=False,  # httpx decodes Content-Encoding itself
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            )
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout", {})
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        try:
            body: bytes | AsyncIterator[bytes] | None = request.content or None
        except httpx.RequestNotRead:  # a streamed body: aiohttp does the chunked framing
            body = _request_chunks(request.stream)
            headers = [(k, v) for k, v in headers if k.lower() != "transfer-encoding"]
        with _as_httpx_errors(request):
            response = await self._client().request(
                request.method,
                str(request.url),
                headers=headers,
                data=body,
                allow_redirects=False,  # httpx follows them, or not, itself
                proxy=self._proxy_for(request.url),
                compress=None,
                timeout=aiohttp.ClientTimeout(
                    total=None,
                    connect=timeout.get("pool"),
                    sock_connect=timeout.get("connect"),
                    sock_read=timeout.get("read"),
                ),
            )
        return httpx.Response(
            status_code=response.status,
            headers=response.raw_headers,
            stream=_ResponseStream(response, request),
            request=request,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": (response.reason or "").encode()},
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


class _ResponseStream(httpx.AsyncByteStream):
    """A response body as it arrives; closing it returns the connection to the pool when the body was
    read to its end, and closes the connection otherwise."""

    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors(self._request):
            async for chunk in self._response.content.iter_any():
                yield chunk

    async def aclose(self) -> None:
        self._response.release()


async def _request_chunks(stream: httpx.AsyncByteStream | httpx.SyncByteStream) -> AsyncIterator[bytes]:
    if isinstance(stream, httpx.AsyncByteStream):
        async for chunk in stream:
            yield chunk
    else:
        for chunk in stream:
            yield chunk


@contextlib.contextmanager
def _as_httpx_errors(request: httpx.Request) -> Iterator[None]:
    """aiohttp's failures as the httpx exceptions a provider (and httpx's own transport) would see."""
    try:
        yield
    except aiohttp.ConnectionTimeoutError as exc:
        raise httpx.ConnectTimeout(str(exc) or "connect timed out", request=request) from exc
    except aiohttp.SocketTimeoutError as exc:
        raise httpx.ReadTimeout(str(exc) or "read timed out", request=request) from exc
    except (aiohttp.ClientConnectorError, aiohttp.ClientProxyConnectionError) as exc:
        raise httpx.ConnectError(str(exc), request=request) from exc
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError) as exc:
        raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__, request=request) from exc
    except aiohttp.InvalidURL as exc:
        raise httpx.UnsupportedProtocol(str(exc), request=request) from exc
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise httpx.NetworkError(str(exc) or type(exc).__name__, request=request) from exc
