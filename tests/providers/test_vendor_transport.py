"""The vendor client's aiohttp transport against real loopback servers that speak HTTP/1.1 byte by byte:
what httpx's own transport would do (bodies as they arrive, decoding, headers, streamed uploads,
connections reused only after a full body), and its failures as the httpx exceptions providers map."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from iris.app.settings import load_settings
from iris.app.vendor_http import AiohttpTransport, vendor_http_client

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Server:
    """A raw TCP server on 127.0.0.1 whose connections each run ``handler``; counts connections."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer)
        finally:
            writer.close()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()


async def _request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One request's head and its body (Content-Length or chunked)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.lower().split(b"\r\n")
    length = next((int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length:")), None)
    if length is not None:
        return head, await reader.readexactly(length)
    if any(line.startswith(b"transfer-encoding: chunked") for line in lines):
        body = b""
        while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
            body += await reader.readexactly(size)
            await reader.readexactly(2)
        await reader.readexactly(2)
        return head, body
    return head, b""


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with vendor_http_client() as http:
        http.timeout = httpx.Timeout(10)
        yield http


def test_the_default_client_is_on_aiohttp_and_http2_is_a_setting() -> None:
    assert isinstance(vendor_http_client()._transport, AiohttpTransport)
    assert not isinstance(vendor_http_client(http2=True)._transport, AiohttpTransport)
    assert load_settings({"IRIS_VENDOR_HTTP2": "true"}).vendor_http2
    assert not load_settings({}).vendor_http2


async def test_a_body_arrives_as_it_is_sent(client: httpx.AsyncClient) -> None:
    """The first chunk reaches the provider before the server sends the second (no buffering)."""
    received_first = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        writer.write(b"7\r\ndata: 1\r\n")
        await writer.drain()
        await asyncio.wait_for(received_first.wait(), 5)
        writer.write(b"7\r\ndata: 2\r\n0\r\n\r\n")
        await writer.drain()

    async with Server(handler) as base, client.stream("POST", base, json={"a": 1}) as response:
        pieces = []
        async for piece in response.aiter_bytes():
            pieces.append(piece)
            received_first.set()
    assert b"".join(pieces) == b"data: 1data: 2"
    assert pieces[0] == b"data: 1"


async def test_headers_status_and_gzip_bodies_come_through(client: httpx.AsyncClient) -> None:
    seen: list[bytes] = []
    payload = gzip.compress(b'{"answer": "\xc3\xa9"}')

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, body = await _request(reader)
        seen.extend([head, body])
        writer.write(
            b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nX-Dup: a\r\nX-Dup: b\r\n"
            b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s" % (len(payload), payload)
        )
        await writer.drain()

    async with Server(handler) as base:
        response = await client.post(
            f"{base}/v1/x?q=1", json={"b": "é"}, headers={"Authorization": "Bearer k"}
        )
    assert response.status_code == 429
    assert response.reason_phrase == "Too Many Requests"
    assert response.headers["retry-after"] == "3"
    assert response.headers.get_list("x-dup") == ["a", "b"]
    assert response.json() == {"answer": "é"}
    head, body = seen
    assert head.startswith(b"POST /v1/x?q=1 HTTP/1.1\r\n")
    assert b"\r\nauthorization: bearer k\r\n" in head.lower()
    assert body == '{"b":"é"}'.encode()


async def test_a_streamed_upload_is_sent_chunked_once(client: httpx.AsyncClient) -> None:
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, body = await _request(reader)
        seen.extend([head, body])
        writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        await writer.drain()

    async def upload() -> AsyncIterator[bytes]:
        for part in (b"one,", b"two,", b"three"):
            yield part

    async with Server(handler) as base:
        response = await client.post(base, content=upload())
    assert response.status_code == 204
    head, body = seen
    assert head.lower().count(b"transfer-encoding") == 1
    assert body == b"one,two,three"


async def test_a_connection_is_reused_only_after_a_whole_body(client: httpx.AsyncClient) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head, _ = await _request(reader)
            except asyncio.IncompleteReadError:
                return
            if head.startswith(b"GET /partial "):  # the rest of the body would come later
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nsome of it")
            else:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nabcdef")
            await writer.drain()

    server = Server(handler)
    async with server as base:
        for _ in range(3):
            assert (await client.get(base)).content == b"abcdef"
        assert server.connections == 1
        async with client.stream("GET", f"{base}/partial") as response:  # left before the body ended
            assert response.status_code == 200
        assert (await client.get(base)).content == b"abcdef"
        assert server.connections == 2


async def test_a_refused_connection_is_a_connect_error(client: httpx.AsyncClient) -> None:
    async with Server(lambda r, w: asyncio.sleep(0)) as base:
        pass  # closed: nothing listens on the port any more
    with pytest.raises(httpx.ConnectError):
        await client.get(base)


async def test_a_body_cut_short_is_a_transport_error(client: httpx.AsyncClient) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
        await writer.drain()

    async with Server(handler) as base, client.stream("GET", base) as response:
        with pytest.raises(httpx.RemoteProtocolError):
            async for _ in response.aiter_bytes():
                pass


async def test_a_silent_server_hits_the_read_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        await asyncio.sleep(5)

    async with vendor_http_client() as http, Server(handler) as base:
        with pytest.raises(httpx.ReadTimeout):
            await http.get(base, timeout=httpx.Timeout(10, read=0.2))


async def test_proxies_come_from_the_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``HTTP_PROXY`` sends a vendor request through the proxy; ``NO_PROXY`` hosts go direct."""
    heads: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, _ = await _request(reader)
        heads.append(head)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()

    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)  # the lower-case spelling wins where both are set
    async with Server(handler) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.setenv("NO_PROXY", "direct.invalid")
        async with vendor_http_client() as http:
            monkeypatch.delenv("HTTP_PROXY")  # read when the client was built, as httpx does
            assert (await http.get("http://vendor.invalid/v1/models")).text == "ok"
            with pytest.raises(httpx.ConnectError):  # bypassed: a direct lookup of a name that has none
                await http.get("http://direct.invalid/v1/models")
    assert heads[0].startswith(b"GET http://vendor.invalid/v1/models HTTP/1.1\r\n")
    assert len(heads) == 1
